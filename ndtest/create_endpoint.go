package ndtest

import (
	"slices"
	"testing"

	"github.com/godirect/nd"
)

// createEndpointCases check Connector.CreateEndpoint: queue and limit
// validation by ND parameter position, the limits' valid ranges, the granted
// inline size, one endpoint per connector and a queue shared by both
// directions.
var createEndpointCases = slices.Concat([]testCase{
	{"NilInboundCQ", `docs/semantics.md "CreateEndpoint queues": the inbound queue is parameter 1; a missing one fails ND_INVALID_PARAMETER_1`, createEndpointNilInboundCQ},
	{"NilOutboundCQ", `docs/semantics.md "CreateEndpoint queues": the outbound queue is parameter 2; a missing one fails ND_INVALID_PARAMETER_2`, createEndpointNilOutboundCQ},
	{"ForeignInboundCQ", `docs/semantics.md "CreateEndpoint queues": an inbound queue of another adapter fails ND_INVALID_PARAMETER_1`, createEndpointForeignInboundCQ},
	{"ForeignOutboundCQ", `docs/semantics.md "CreateEndpoint queues": an outbound queue of another adapter fails ND_INVALID_PARAMETER_2`, createEndpointForeignOutboundCQ},
}, limitCases(), []testCase{
	{"BeyondMax/AllReportsFirst", `docs/semantics.md "CreateEndpoint limits": with every limit out of range, the first parameter in ND order is the one reported`, createEndpointBeyondMaxAllReportsFirst},
	{"ZeroInboundEntries", `docs/semantics.md "CreateEndpoint limits": InboundEntries must be at least 1 (ND_INVALID_PARAMETER_3)`, createEndpointZeroInboundEntries},
	{"ZeroOutboundEntries", `docs/semantics.md "CreateEndpoint limits": OutboundEntries must be at least 1 (ND_INVALID_PARAMETER_4)`, createEndpointZeroOutboundEntries},
	{"ZeroSGEAndReadLimits", `docs/semantics.md "endpoint without SGEs": SGE and read limits of 0 are valid; such an endpoint carries zero-byte Sends and refuses an SGE with ND_DATA_OVERRUN`, createEndpointZeroSGEAndReadLimits},
	{"AllMaxima", `docs/semantics.md "CreateEndpoint limits": an endpoint of every maximum the adapter reports is created and works`, createEndpointAllMaxima},
	{"MaxInlineData", `docs/semantics.md "inline size": the endpoint grants an inline size within the adapter's MaxInlineData`, createEndpointMaxInlineData},
	{"SecondEndpoint", `docs/semantics.md "one endpoint per connector": a connector has one endpoint; a second CreateEndpoint fails ND_NOT_SUPPORTED`, createEndpointSecondEndpoint},
	{"AdapterClosed", `docs/semantics.md "call after a close": CreateEndpoint after its adapter closed fails ND_DEVICE_REMOVED`, createEndpointAdapterClosed},
	{"SharedCQ", `docs/semantics.md "CreateEndpoint queues": one completion queue may serve as both the inbound and the outbound queue`, createEndpointSharedCQ},
})

// limitsWithin returns DefaultLimits clamped to the adapter's maxima.
func limitsWithin(info nd.AdapterInfo) nd.EndpointLimits {
	l := DefaultLimits
	l.InboundEntries = min(l.InboundEntries, info.MaxInboundRequests)
	l.OutboundEntries = min(l.OutboundEntries, info.MaxOutboundRequests)
	l.InboundSGE = min(l.InboundSGE, info.MaxInboundSGE)
	l.OutboundSGE = min(l.OutboundSGE, info.MaxOutboundSGE)
	l.InboundReadLimit = min(l.InboundReadLimit, info.MaxInboundReadLimit)
	l.OutboundReadLimit = min(l.OutboundReadLimit, info.MaxOutboundReadLimit)
	return l
}

// create calls CreateEndpoint on a fresh connector of a and closes the
// endpoint at the end of the test if one was made.
func create(t *testing.T, a nd.Adapter, in, out nd.CompletionQueue, l nd.EndpointLimits) (nd.Endpoint, error) {
	t.Helper()
	c := mustConnector(t, a)
	ep, err := c.CreateEndpoint(in, out, l)
	if err == nil {
		t.Cleanup(func() { ep.Close() })
	}
	return ep, err
}

// limitCase is one of CreateEndpoint's six limits.
type limitCase struct {
	name   string
	field  func(*nd.EndpointLimits) *int
	max    func(nd.AdapterInfo) int
	status nd.Status // the status for a value out of range
}

// limits are the six limits, in ND parameter order (3..8).
var limits = []limitCase{
	{"InboundEntries", func(l *nd.EndpointLimits) *int { return &l.InboundEntries }, func(i nd.AdapterInfo) int { return i.MaxInboundRequests }, nd.ErrInvalidParameter3},
	{"OutboundEntries", func(l *nd.EndpointLimits) *int { return &l.OutboundEntries }, func(i nd.AdapterInfo) int { return i.MaxOutboundRequests }, nd.ErrInvalidParameter4},
	{"InboundSGE", func(l *nd.EndpointLimits) *int { return &l.InboundSGE }, func(i nd.AdapterInfo) int { return i.MaxInboundSGE }, nd.ErrInvalidParameter5},
	{"OutboundSGE", func(l *nd.EndpointLimits) *int { return &l.OutboundSGE }, func(i nd.AdapterInfo) int { return i.MaxOutboundSGE }, nd.ErrInvalidParameter6},
	{"InboundReadLimit", func(l *nd.EndpointLimits) *int { return &l.InboundReadLimit }, func(i nd.AdapterInfo) int { return i.MaxInboundReadLimit }, nd.ErrInvalidParameter7},
	{"OutboundReadLimit", func(l *nd.EndpointLimits) *int { return &l.OutboundReadLimit }, func(i nd.AdapterInfo) int { return i.MaxOutboundReadLimit }, nd.ErrInvalidParameter8},
}

// limitCases are two cases per limit: a value beyond the adapter's maximum
// and a negative one, each refused with the limit's parameter status.
func limitCases() []testCase {
	var cases []testCase
	for _, lc := range limits {
		cases = append(cases,
			testCase{"BeyondMax/" + lc.name, `docs/semantics.md "CreateEndpoint limits": a limit beyond the adapter's maximum fails ND_INVALID_PARAMETER_n, n its parameter position (3..8)`, func(t *testing.T, p nd.Provider) {
				a, _ := OpenAdapters(t, p)
				info := query(t, a)
				in, out := mustCQ(t, a, 64), mustCQ(t, a, 64)
				l := limitsWithin(info)
				*lc.field(&l) = lc.max(info) + 1
				_, err := create(t, a, in, out, l)
				expectStatus(t, "CreateEndpoint("+lc.name+" = max+1)", err, lc.status)
			}},
			testCase{"Negative/" + lc.name, `docs/semantics.md "CreateEndpoint limits": a negative limit fails ND_INVALID_PARAMETER_n, n its parameter position (3..8)`, func(t *testing.T, p nd.Provider) {
				a, _ := OpenAdapters(t, p)
				in, out := mustCQ(t, a, 64), mustCQ(t, a, 64)
				l := limitsWithin(query(t, a))
				*lc.field(&l) = -1
				_, err := create(t, a, in, out, l)
				expectStatus(t, "CreateEndpoint("+lc.name+" = -1)", err, lc.status)
			}})
	}
	return cases
}

func createEndpointNilInboundCQ(t *testing.T, p nd.Provider) {
	a, _ := OpenAdapters(t, p)
	cq := mustCQ(t, a, 64)
	_, err := create(t, a, nil, cq, limitsWithin(query(t, a)))
	expectStatus(t, "CreateEndpoint(nil inbound CQ)", err, nd.ErrInvalidParameter1)
}

func createEndpointNilOutboundCQ(t *testing.T, p nd.Provider) {
	a, _ := OpenAdapters(t, p)
	cq := mustCQ(t, a, 64)
	_, err := create(t, a, cq, nil, limitsWithin(query(t, a)))
	expectStatus(t, "CreateEndpoint(nil outbound CQ)", err, nd.ErrInvalidParameter2)
}

func createEndpointForeignInboundCQ(t *testing.T, p nd.Provider) {
	a, b := OpenAdapters(t, p)
	own, foreign := mustCQ(t, a, 64), mustCQ(t, b, 64)
	_, err := create(t, a, foreign, own, limitsWithin(query(t, a)))
	expectStatus(t, "CreateEndpoint(inbound CQ of another adapter)", err, nd.ErrInvalidParameter1)
}

func createEndpointForeignOutboundCQ(t *testing.T, p nd.Provider) {
	a, b := OpenAdapters(t, p)
	own, foreign := mustCQ(t, a, 64), mustCQ(t, b, 64)
	_, err := create(t, a, own, foreign, limitsWithin(query(t, a)))
	expectStatus(t, "CreateEndpoint(outbound CQ of another adapter)", err, nd.ErrInvalidParameter2)
}

// Every limit beyond the maximum at once: the first parameter in ND
// order is the one reported.
func createEndpointBeyondMaxAllReportsFirst(t *testing.T, p nd.Provider) {
	a, _ := OpenAdapters(t, p)
	info := query(t, a)
	in, out := mustCQ(t, a, 64), mustCQ(t, a, 64)
	var l nd.EndpointLimits
	for _, lc := range limits {
		*lc.field(&l) = lc.max(info) + 1
	}
	_, err := create(t, a, in, out, l)
	expectStatus(t, "CreateEndpoint(all limits max+1)", err, nd.ErrInvalidParameter3)
}

func createEndpointZeroInboundEntries(t *testing.T, p nd.Provider) {
	a, _ := OpenAdapters(t, p)
	in, out := mustCQ(t, a, 64), mustCQ(t, a, 64)
	l := limitsWithin(query(t, a))
	l.InboundEntries = 0
	_, err := create(t, a, in, out, l)
	expectStatus(t, "CreateEndpoint(InboundEntries = 0)", err, nd.ErrInvalidParameter3)
}

func createEndpointZeroOutboundEntries(t *testing.T, p nd.Provider) {
	a, _ := OpenAdapters(t, p)
	in, out := mustCQ(t, a, 64), mustCQ(t, a, 64)
	l := limitsWithin(query(t, a))
	l.OutboundEntries = 0
	_, err := create(t, a, in, out, l)
	expectStatus(t, "CreateEndpoint(OutboundEntries = 0)", err, nd.ErrInvalidParameter4)
}

// SGE and read limits of 0 are valid; such endpoints connect and carry
// zero-byte Sends, and refuse an SGE.
func createEndpointZeroSGEAndReadLimits(t *testing.T, p nd.Provider) {
	zero := nd.EndpointLimits{InboundEntries: 4, OutboundEntries: 4}
	pr := NewPair(t, p, PairConfig{ActiveLimits: zero, PassiveLimits: zero})
	rr := new(nd.Result)
	mustPost(t, "Receive(nil)", pr.Passive.Endpoint.Receive(rr, nil))
	sr := new(nd.Result)
	mustPost(t, "Send(nil)", pr.Active.Endpoint.Send(sr, nil, 0))
	Expect(t, pr.Active.OutCQ, sr, nd.Success, 0)
	Expect(t, pr.Passive.InCQ, rr, nd.Success, 0)
	buf, mr := regBuf(t, pr.Passive, 8, 1)
	err := pr.Passive.Endpoint.Receive(new(nd.Result), one(buf, mr))
	expectStatus(t, "Receive with 1 SGE on an endpoint with InboundSGE 0", err, nd.ErrDataOverrun)
}

// ndmemorytest NdQpMax
func createEndpointAllMaxima(t *testing.T, p nd.Provider) {
	a, _ := OpenAdapters(t, p)
	info := query(t, a)
	in, out := mustCQ(t, a, 64), mustCQ(t, a, 64)
	l := nd.EndpointLimits{
		InboundEntries: info.MaxInboundRequests, OutboundEntries: info.MaxOutboundRequests,
		InboundSGE: info.MaxInboundSGE, OutboundSGE: info.MaxOutboundSGE,
		InboundReadLimit: info.MaxInboundReadLimit, OutboundReadLimit: info.MaxOutboundReadLimit,
	}
	ep, err := create(t, a, in, out, l)
	if err != nil {
		t.Fatalf("CreateEndpoint(%+v) with every limit at the adapter's maximum: %v", l, err)
	}
	if n := ep.MaxInlineData(); n < 0 || n > info.MaxInlineData {
		t.Fatalf("MaxInlineData() = %d, want 0..%d (Query().MaxInlineData)", n, info.MaxInlineData)
	}
}

func createEndpointMaxInlineData(t *testing.T, p nd.Provider) {
	pr := NewPair(t, p, PairConfig{})
	for _, s := range []*Side{pr.Active, pr.Passive} {
		info := query(t, s.Adapter)
		if n := s.Endpoint.MaxInlineData(); n < 0 || n > info.MaxInlineData {
			t.Fatalf("MaxInlineData() = %d, want 0..%d (Query().MaxInlineData)", n, info.MaxInlineData)
		}
	}
	t.Logf("granted inline data: %d bytes", pr.Active.Inline)
}

func createEndpointSecondEndpoint(t *testing.T, p nd.Provider) {
	a, _ := OpenAdapters(t, p)
	in, out := mustCQ(t, a, 64), mustCQ(t, a, 64)
	c := mustConnector(t, a)
	l := limitsWithin(query(t, a))
	ep, err := c.CreateEndpoint(in, out, l)
	if err != nil {
		t.Fatalf("first CreateEndpoint: %v", err)
	}
	t.Cleanup(func() { ep.Close() })
	ep2, err := c.CreateEndpoint(in, out, l)
	if err == nil {
		ep2.Close()
	}
	expectStatus(t, "second CreateEndpoint on one connector", err, nd.ErrNotSupported)
}

func createEndpointAdapterClosed(t *testing.T, p nd.Provider) {
	a, _ := OpenAdapters(t, p)
	in, out := mustCQ(t, a, 64), mustCQ(t, a, 64)
	c := mustConnector(t, a)
	l := limitsWithin(query(t, a))
	if err := a.Close(); err != nil {
		t.Fatalf("adapter Close: %v", err)
	}
	ep, err := c.CreateEndpoint(in, out, l)
	if err == nil {
		ep.Close()
	}
	expectStatus(t, "CreateEndpoint after the adapter closed", err, nd.ErrDeviceRemoved)
}

// One queue serves both directions on each side: every completion of
// the side arrives there, each request's own Result.
func createEndpointSharedCQ(t *testing.T, p nd.Provider) {
	pr := NewPair(t, p, PairConfig{SharedCQ: true})
	if pr.Active.InCQ != pr.Active.OutCQ || pr.Passive.InCQ != pr.Passive.OutCQ {
		t.Fatal("harness did not share the queue")
	}
	ping, pong := pattern(100, 1), pattern(60, 2)
	ar, abuf := postRecv(t, pr.Active, len(pong))
	pRecv, pbuf := postRecv(t, pr.Passive, len(ping))
	as := postSend(t, pr.Active, ping, 0)
	Expect(t, pr.Passive.InCQ, pRecv, nd.Success, len(ping))
	checkBytes(t, "passive received", pbuf, ping)
	ps := postSend(t, pr.Passive, pong, 0)
	Expect(t, pr.Passive.OutCQ, ps, nd.Success, len(pong))
	ExpectEmpty(t, pr.Passive.InCQ)
	// The active side's Send and Receive completions are in different
	// directions: any order.
	got := map[*nd.Result]bool{Wait(t, pr.Active.InCQ): true, Wait(t, pr.Active.InCQ): true}
	if !got[as] || !got[ar] {
		t.Fatalf("shared queue returned %v, want the Send's and the Receive's Results", got)
	}
	if as.Status != nd.Success || as.BytesTransferred != len(ping) {
		t.Fatalf("Send completion %v/%d bytes, want success/%d", as.Status, as.BytesTransferred, len(ping))
	}
	if ar.Status != nd.Success || ar.BytesTransferred != len(pong) {
		t.Fatalf("Receive completion %v/%d bytes, want success/%d", ar.Status, ar.BytesTransferred, len(pong))
	}
	checkBytes(t, "active received", abuf, pong)
	ExpectEmpty(t, pr.Active.InCQ)
}
