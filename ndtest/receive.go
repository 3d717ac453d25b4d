package ndtest

import (
	"testing"

	"github.com/godirect/nd"
)

// receiveCases check Endpoint.Receive: scatter, zero-length Receives,
// Receives posted before connecting, post order, the immediate errors, and
// the termination of the connection by a Send larger than the Receive or a
// Send with no Receive posted.
var receiveCases = []testCase{
	{"Scatter", `docs/semantics.md "scatter/gather": a message is scattered over the SGEs in order`, receiveScatter},
	{"ZeroLength", `docs/semantics.md "zero bytes": a Receive of no SGE takes a zero-byte message`, receiveZeroLength},
	{"PrePostedBeforeConnect", `docs/semantics.md "before the connection": Receives may be posted before the endpoint connects`, receivePrePostedBeforeConnect},
	{"PostOrder", `docs/semantics.md "completion order": Receives are consumed in post order`, receivePostOrder},
	{"TooManySGEs", `docs/semantics.md "posting checks": more SGEs than InboundSGE fail ND_DATA_OVERRUN`, receiveTooManySGEs},
	{"QueueFull", `docs/semantics.md "queue depth": a Receive beyond InboundEntries not yet reaped fails ND_NO_MORE_ENTRIES`, receiveQueueFull},
	{"TooLong", `docs/semantics.md "posting checks": a Receive beyond MaxInboundLength fails ND_BUFFER_OVERFLOW`, receiveTooLong},
	{"NilResult", `docs/semantics.md "posting checks": a Receive without a Result fails ND_INVALID_PARAMETER_1`, receiveNilResult},
	{"AccessViolation", `docs/semantics.md "bad local SGE": a buffer outside its registration completes ND_ACCESS_VIOLATION and ends the connection`, receiveAccessViolation},
	{"Oversized", `docs/semantics.md "Send larger than the oldest Receive": a message larger than the Receive completes ND_BUFFER_OVERFLOW and ends the connection`, receiveOversized},
	{"NoReceivePosted", `docs/semantics.md "Send with no Receive posted": a Send that finds no Receive posted ends the connection`, receiveNoReceivePosted},
	{"ZeroLengthOverflow", `docs/semantics.md "zero bytes": a message larger than a zero-length Receive completes ND_BUFFER_OVERFLOW`, receiveZeroLengthOverflow},
	{"ExactFit", `docs/semantics.md "message size": a message of exactly the Receive's length fits`, receiveExactFit},
}

func receiveScatter(t *testing.T, p nd.Provider) {
	pr := NewPair(t, p, PairConfig{})
	s := pr.Passive
	a, amr := regBuf(t, s, 64, 1)
	b, bmr := regBuf(t, s, 64, 2)
	guardA, guardB := append([]byte(nil), a...), append([]byte(nil), b...)
	sgl := []nd.SGE{{Buffer: a[3:8], Region: amr}, {Buffer: b[10:17], Region: bmr}, {Buffer: a[20:36], Region: amr}}
	rr := new(nd.Result)
	mustPost(t, "Receive(3 SGEs)", s.Endpoint.Receive(rr, sgl))
	msg := pattern(20, 3) // 5 + 7 + 8 of the last entry's 16
	sr := postSend(t, pr.Active, msg, 0)
	Expect(t, pr.Active.OutCQ, sr, nd.Success, len(msg))
	Expect(t, s.InCQ, rr, nd.Success, len(msg))
	wantA, wantB := guardA, guardB
	copy(wantA[3:8], msg[0:5])
	copy(wantB[10:17], msg[5:12])
	copy(wantA[20:28], msg[12:20])
	checkBytes(t, "first registration after scatter (entries 1 and 3, rest untouched)", a, wantA)
	checkBytes(t, "second registration after scatter (entry 2, rest untouched)", b, wantB)
}

func receiveZeroLength(t *testing.T, p nd.Provider) {
	pr := NewPair(t, p, PairConfig{})
	rr, _ := postRecv(t, pr.Passive, 0)
	sr := postSend(t, pr.Active, nil, 0)
	Expect(t, pr.Active.OutCQ, sr, nd.Success, 0)
	Expect(t, pr.Passive.InCQ, rr, nd.Success, 0)
}

func receivePrePostedBeforeConnect(t *testing.T, p nd.Provider) {
	var pRecv, aRecv *nd.Result
	var pBuf, aBuf []byte
	pr := NewPair(t, p, PairConfig{
		PrePostActive:  func(s *Side) { aRecv, aBuf = postRecv(t, s, 40) },
		PrePostPassive: func(s *Side) { pRecv, pBuf = postRecv(t, s, 40) },
	})
	// The active side sends first; the passive side answers.
	m1, m2 := pattern(40, 4), pattern(33, 5)
	s1 := postSend(t, pr.Active, m1, 0)
	Expect(t, pr.Active.OutCQ, s1, nd.Success, len(m1))
	Expect(t, pr.Passive.InCQ, pRecv, nd.Success, len(m1))
	checkBytes(t, "passive pre-posted Receive", pBuf, m1)
	s2 := postSend(t, pr.Passive, m2, 0)
	Expect(t, pr.Passive.OutCQ, s2, nd.Success, len(m2))
	Expect(t, pr.Active.InCQ, aRecv, nd.Success, len(m2))
	checkBytes(t, "active pre-posted Receive", aBuf[:len(m2)], m2)
}

func receivePostOrder(t *testing.T, p nd.Provider) {
	pr := NewPair(t, p, PairConfig{})
	const n = 12
	var recvs [n]*nd.Result
	var bufs [n][]byte
	for i := range n {
		recvs[i], bufs[i] = postRecv(t, pr.Passive, 100)
	}
	var msgs [n][]byte
	var sends [n]*nd.Result
	for i := range n {
		msgs[i] = pattern(100-i, byte(40+i))
		sends[i] = postSend(t, pr.Active, msgs[i], 0)
	}
	for i := range n {
		Expect(t, pr.Active.OutCQ, sends[i], nd.Success, len(msgs[i]))
	}
	for i := range n {
		Expect(t, pr.Passive.InCQ, recvs[i], nd.Success, len(msgs[i]))
		checkBytes(t, "Receive in post order", bufs[i][:len(msgs[i])], msgs[i])
	}
}

func receiveTooManySGEs(t *testing.T, p nd.Provider) {
	pr := NewPair(t, p, PairConfig{})
	buf, mr := regBuf(t, pr.Passive, 64, 6)
	sgl := make([]nd.SGE, DefaultLimits.InboundSGE+1)
	for i := range sgl {
		sgl[i] = nd.SGE{Buffer: buf[i*8 : i*8+8], Region: mr}
	}
	err := pr.Passive.Endpoint.Receive(new(nd.Result), sgl)
	expectStatus(t, "Receive with InboundSGE+1 entries", err, nd.ErrDataOverrun)
	ExpectEmpty(t, pr.Passive.InCQ)
	transfer(t, pr.Active, pr.Passive, pattern(9, 7))
}

func receiveQueueFull(t *testing.T, p nd.Provider) {
	const depth = 4
	l := DefaultLimits
	l.InboundEntries = depth
	pr := NewPair(t, p, PairConfig{PassiveLimits: l})
	var recvs []*nd.Result
	for range depth {
		r, _ := postRecv(t, pr.Passive, 0)
		recvs = append(recvs, r)
	}
	extra := new(nd.Result)
	expectStatus(t, "Receive beyond InboundEntries outstanding", pr.Passive.Endpoint.Receive(extra, nil), nd.ErrNoMoreEntries)
	ExpectEmpty(t, pr.Passive.InCQ)
	// One Receive completes and is reaped: there is room again.
	sr := postSend(t, pr.Active, nil, 0)
	Expect(t, pr.Active.OutCQ, sr, nd.Success, 0)
	Expect(t, pr.Passive.InCQ, recvs[0], nd.Success, 0)
	mustPost(t, "Receive after one completed", pr.Passive.Endpoint.Receive(extra, nil))
	recvs = append(recvs[1:], extra)
	for range recvs {
		sr := postSend(t, pr.Active, nil, 0)
		Expect(t, pr.Active.OutCQ, sr, nd.Success, 0)
	}
	for _, r := range recvs {
		Expect(t, pr.Passive.InCQ, r, nd.Success, 0)
	}
}

func receiveTooLong(t *testing.T, p nd.Provider) {
	pr := NewPair(t, p, PairConfig{})
	info := query(t, pr.Passive.Adapter)
	n := DefaultLimits.InboundSGE
	per := info.MaxInboundLength/n + 1
	skipIfTooBig(t, int64(per), "a Receive beyond MaxInboundLength")
	if per > info.MaxRegistrationSize {
		t.Skipf("MaxInboundLength %d cannot be exceeded with %d SGEs of one registration", info.MaxInboundLength, n)
	}
	buf := make([]byte, per)
	mr := pr.Passive.Register(t, buf)
	sgl := make([]nd.SGE, n)
	for i := range sgl {
		sgl[i] = nd.SGE{Buffer: buf, Region: mr}
	}
	err := pr.Passive.Endpoint.Receive(new(nd.Result), sgl)
	expectStatus(t, "Receive of MaxInboundLength+ bytes", err, nd.ErrBufferOverflow)
	ExpectEmpty(t, pr.Passive.InCQ)
	transfer(t, pr.Active, pr.Passive, pattern(9, 8))
}

func receiveNilResult(t *testing.T, p nd.Provider) {
	pr := NewPair(t, p, PairConfig{})
	expectStatus(t, "Receive(nil Result)", pr.Passive.Endpoint.Receive(nil, nil), nd.ErrInvalidParameter1)
	ExpectEmpty(t, pr.Passive.InCQ)
	transfer(t, pr.Active, pr.Passive, pattern(9, 9))
}

func receiveAccessViolation(t *testing.T, p nd.Provider) {
	pr := NewPair(t, p, PairConfig{})
	ar, _ := postRecv(t, pr.Active, 8)
	_, mr := regBuf(t, pr.Passive, 64, 10)
	bad := new(nd.Result)
	mustPost(t, "Receive outside its region", pr.Passive.Endpoint.Receive(bad, one(make([]byte, 32), mr)))
	// The failure may be found at post time or when data arrives; the
	// Send may therefore find the connection gone already.
	sr := postSend(t, pr.Active, pattern(16, 11), 0)
	expectAccessViolation(t, pr.Passive.InCQ, bad, nd.CauseLocalAccess)
	got := Wait(t, pr.Active.OutCQ)
	if got != sr {
		t.Fatalf("GetResults returned %p, want the Send's Result %p", got, sr)
	}
	switch got.Status {
	case nd.Success, nd.ErrRemoteError, nd.ErrCanceled:
		t.Logf("the sender's Send completed with %s", got.Status.Name())
	default:
		t.Fatalf("the sender's Send completed with %v, want ND_SUCCESS, ND_REMOTE_ERROR or ND_CANCELED", got.Status)
	}
	expectTerminated(t, pr, []*nd.Result{ar}, nil)
}

// ndmval: 1024 bytes into a 1023-byte Receive.
func receiveOversized(t *testing.T, p nd.Provider) {
	pr := NewPair(t, p, PairConfig{})
	ar, _ := postRecv(t, pr.Active, 8)
	small, _ := postRecv(t, pr.Passive, 1023)
	other, _ := postRecv(t, pr.Passive, 4096)
	sr := postSend(t, pr.Active, pattern(1024, 12), 0)
	Expect(t, pr.Passive.InCQ, small, nd.ErrBufferOverflow, 0)
	expectSenderStatus(t, pr.Active, sr)
	expectTerminated(t, pr, []*nd.Result{ar}, []*nd.Result{other})
	expectReason(t, pr.Passive.Connector, "a Receive smaller than the Send", &nd.DisconnectError{Op: "Receive", Status: nd.ErrBufferOverflow})
}

// ndmemorytest NdSendNoReceive: the peer terminates, nothing hangs.
func receiveNoReceivePosted(t *testing.T, p nd.Provider) {
	pr := NewPair(t, p, PairConfig{})
	ar, _ := postRecv(t, pr.Active, 8)
	sr := postSend(t, pr.Active, pattern(16, 13), 0)
	expectSenderStatus(t, pr.Active, sr)
	expectTerminated(t, pr, []*nd.Result{ar}, nil)
	ExpectEmpty(t, pr.Passive.InCQ)
	expectReason(t, pr.Passive.Connector, "a Send that found no Receive", &nd.DisconnectError{Peer: true, Op: "Send", Status: nd.ErrBufferOverflow, Cause: nd.CauseNoReceive})
}

// A zero-byte Receive overflows on a non-empty Send.
func receiveZeroLengthOverflow(t *testing.T, p nd.Provider) {
	pr := NewPair(t, p, PairConfig{})
	rr, _ := postRecv(t, pr.Passive, 0)
	sr := postSend(t, pr.Active, []byte{1}, 0)
	Expect(t, pr.Passive.InCQ, rr, nd.ErrBufferOverflow, -1)
	expectSenderStatus(t, pr.Active, sr)
	expectTerminated(t, pr, nil, nil)
}

// The Receive of an exactly fitting message succeeds (the boundary of
// Oversized).
func receiveExactFit(t *testing.T, p nd.Provider) {
	pr := NewPair(t, p, PairConfig{})
	transfer(t, pr.Active, pr.Passive, pattern(1023, 14))
}
