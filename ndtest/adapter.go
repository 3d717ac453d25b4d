package ndtest

import (
	"net/netip"
	"slices"
	"strconv"
	"testing"

	"github.com/godirect/nd"
)

// unservedAddr is a TEST-NET-1 address (RFC 5737): no provider should serve
// it, and OpenAdapter must refuse it without contacting anything.
var unservedAddr = netip.MustParseAddr("192.0.2.250")

// adapterCases check a Provider's addresses and an Adapter: Query,
// CreateCompletionQueue's sizes, Listen's ports and protocols, and Close.
var adapterCases = []testCase{
	{"Addresses", `docs/semantics.md "provider addresses": Addresses lists the addresses the provider serves, at least one, each valid`, adapterAddresses},
	{"OpenAdapter/Address", `docs/semantics.md "provider addresses": OpenAdapter on a listed address opens the adapter of that address`, adapterOpenAdapterAddress},
	{"OpenAdapter/UnservedAddress", `docs/semantics.md "provider addresses": OpenAdapter on an address the provider does not serve fails ND_INVALID_ADDRESS`, adapterOpenAdapterUnservedAddress},
	{"Query", `docs/semantics.md "Query": every maximum is positive, MaxCallerData >= 56, MaxCalleeData >= 148, in-order DMA and loopback flags, repeatable`, testQuery},
	{"CreateCompletionQueue", `docs/semantics.md "queue size": 0, negative or beyond MaxCQEntries entries fail ND_INVALID_PARAMETER`, adapterCreateCompletionQueue},
	{"Listen/InvalidProtocol", `docs/semantics.md "protocol": a protocol outside 0..255 fails ND_INVALID_PARAMETER_2`, adapterListenInvalidProtocol},
	{"Listen/AssignsPort", `docs/semantics.md "ports": port 0 assigns a free port, a different one per listener`, adapterListenAssignsPort},
	{"Listen/SamePortSameProtocol", `docs/semantics.md "ports": a port already listened on with the same protocol fails ND_ADDRESS_ALREADY_EXISTS`, adapterListenSamePortSameProtocol},
	{"Listen/SamePortOtherProtocol", `docs/semantics.md "ports": a port is per protocol; another protocol may listen on it`, adapterListenSamePortOtherProtocol},
	{"Listen/PortFreeAfterClose", `docs/semantics.md "ports": closing a listener frees its port`, adapterListenPortFreeAfterClose},
	{"Close/LaterCallsDeviceRemoved", `docs/semantics.md "call after a close": after Adapter.Close every call on it or its objects fails ND_DEVICE_REMOVED`, testAdapterClosed},
	{"Close/BlockedGetConnectionRequestCanceled", `docs/semantics.md "Adapter": closing the adapter completes a waiting GetConnectionRequest with ND_CANCELED`, adapterCloseBlockedGetConnectionRequestCanceled},
	{"Close/Idempotent", `docs/semantics.md "second Close": a second Close of an adapter succeeds and does nothing`, adapterCloseIdempotent},
}

func adapterAddresses(t *testing.T, p nd.Provider) {
	addrs, err := p.Addresses()
	if err != nil {
		t.Fatalf("Addresses: %v", err)
	}
	if len(addrs) == 0 {
		t.Fatal("Addresses returned no address")
	}
	for _, a := range addrs {
		if !a.IsValid() {
			t.Errorf("Addresses lists the invalid address %v", a)
		}
	}
}

func adapterOpenAdapterAddress(t *testing.T, p nd.Provider) {
	addrs, err := p.Addresses()
	if err != nil || len(addrs) == 0 {
		t.Fatalf("Addresses() = %v, %v", addrs, err)
	}
	for _, addr := range addrs {
		a := openAdapter(t, p, addr)
		if got := a.Address(); got != addr {
			t.Errorf("OpenAdapter(%v).Address() = %v", addr, got)
		}
	}
}

func adapterOpenAdapterUnservedAddress(t *testing.T, p nd.Provider) {
	addrs, _ := p.Addresses()
	if slices.Contains(addrs, unservedAddr) {
		t.Skipf("the provider serves %v", unservedAddr)
	}
	a, err := p.OpenAdapter(unservedAddr)
	if err == nil {
		a.Close()
	}
	expectStatus(t, "OpenAdapter("+unservedAddr.String()+")", err, nd.ErrInvalidAddress)
}

func adapterCreateCompletionQueue(t *testing.T, p nd.Provider) {
	a, _ := OpenAdapters(t, p)
	info := query(t, a)
	for _, n := range []int{0, -1, info.MaxCQEntries + 1} {
		cq, err := a.CreateCompletionQueue(n)
		if err == nil {
			cq.Close()
		}
		expectStatus(t, "CreateCompletionQueue("+strconv.Itoa(n)+")", err, nd.ErrInvalidParameter)
	}
	cq, err := a.CreateCompletionQueue(1)
	if err != nil {
		t.Fatalf("CreateCompletionQueue(1): %v", err)
	}
	if err := cq.Close(); err != nil {
		t.Fatalf("CompletionQueue.Close: %v", err)
	}
}

func adapterListenInvalidProtocol(t *testing.T, p nd.Provider) {
	a, _ := OpenAdapters(t, p)
	for _, proto := range []int{256, -1} {
		l, err := a.Listen(0, proto, 0)
		if err == nil {
			l.Close()
		}
		expectStatus(t, "Listen(0, "+strconv.Itoa(proto)+", 0)", err, nd.ErrInvalidParameter2)
	}
}

func adapterListenAssignsPort(t *testing.T, p nd.Provider) {
	a, _ := OpenAdapters(t, p)
	l1 := listen(t, a, 0)
	l2 := listen(t, a, 0)
	if l1.Port() == 0 || l2.Port() == 0 {
		t.Fatalf("Listen with port 0 assigned ports %d and %d; want non-zero", l1.Port(), l2.Port())
	}
	if l1.Port() == l2.Port() {
		t.Fatalf("two Listen calls with port 0 were both assigned port %d", l1.Port())
	}
}

func adapterListenSamePortSameProtocol(t *testing.T, p nd.Provider) {
	a, _ := OpenAdapters(t, p)
	l := listen(t, a, 0)
	l2, err := a.Listen(0, Protocol, l.Port())
	if err == nil {
		l2.Close()
	}
	expectStatus(t, "second Listen on the same port and protocol", err, nd.ErrAddressAlreadyExists)
}

func adapterListenSamePortOtherProtocol(t *testing.T, p nd.Provider) {
	a, _ := OpenAdapters(t, p)
	l := listen(t, a, 0)
	l2, err := a.Listen(0, Protocol+1, l.Port())
	if err != nil {
		t.Fatalf("Listen on port %d with another protocol: %v", l.Port(), err)
	}
	defer l2.Close()
	if l2.Port() != l.Port() {
		t.Fatalf("Listen(port %d).Port() = %d", l.Port(), l2.Port())
	}
}

func adapterListenPortFreeAfterClose(t *testing.T, p nd.Provider) {
	a, _ := OpenAdapters(t, p)
	l := listen(t, a, 0)
	port := l.Port()
	if err := l.Close(); err != nil {
		t.Fatalf("Listener.Close: %v", err)
	}
	l2, err := a.Listen(0, Protocol, port)
	if err != nil {
		t.Fatalf("Listen on port %d after its listener closed: %v", port, err)
	}
	l2.Close()
}

func adapterCloseBlockedGetConnectionRequestCanceled(t *testing.T, p nd.Provider) {
	addrs, err := p.Addresses()
	if err != nil || len(addrs) == 0 {
		t.Fatalf("Addresses() = %v, %v", addrs, err)
	}
	a := openAdapter(t, p, addrs[0])
	l := listen(t, a, 0)
	req := startGetRequest(t, l, passiveSide(t, a))
	req.parked(t)
	if err := a.Close(); err != nil {
		t.Fatalf("Adapter.Close: %v", err)
	}
	expectStatus(t, "GetConnectionRequest blocked across Adapter.Close", req.wait(t), nd.ErrCanceled)
}

func adapterCloseIdempotent(t *testing.T, p nd.Provider) {
	addrs, _ := p.Addresses()
	if len(addrs) == 0 {
		t.Fatal("no address")
	}
	a := openAdapter(t, p, addrs[0])
	for i := range 2 {
		if err := a.Close(); err != nil {
			t.Fatalf("Adapter.Close #%d: %v", i+1, err)
		}
	}
}

func testQuery(t *testing.T, p nd.Provider) {
	a, _ := OpenAdapters(t, p)
	info := query(t, a)
	positive := []struct {
		name string
		v    int
	}{
		{"MaxInboundSGE", info.MaxInboundSGE},
		{"MaxInboundRequests", info.MaxInboundRequests},
		{"MaxInboundLength", info.MaxInboundLength},
		{"MaxOutboundSGE", info.MaxOutboundSGE},
		{"MaxOutboundRequests", info.MaxOutboundRequests},
		{"MaxOutboundLength", info.MaxOutboundLength},
		{"MaxInboundReadLimit", info.MaxInboundReadLimit},
		{"MaxOutboundReadLimit", info.MaxOutboundReadLimit},
		{"MaxCQEntries", info.MaxCQEntries},
		{"MaxRegistrationSize", info.MaxRegistrationSize},
		{"MaxWindowSize", info.MaxWindowSize},
		{"LargeRequestThreshold", info.LargeRequestThreshold},
	}
	for _, f := range positive {
		if f.v <= 0 {
			t.Errorf("Query: %s = %d; want > 0", f.name, f.v)
		}
	}
	if info.MaxInlineData < 0 {
		t.Errorf("Query: MaxInlineData = %d; want >= 0", info.MaxInlineData)
	}
	if info.MaxWindowSize > info.MaxRegistrationSize {
		t.Errorf("Query: MaxWindowSize %d > MaxRegistrationSize %d", info.MaxWindowSize, info.MaxRegistrationSize)
	}
	if info.MaxCallerData < 56 {
		t.Errorf("Query: MaxCallerData = %d; want >= 56", info.MaxCallerData)
	}
	if info.MaxCalleeData < 148 {
		t.Errorf("Query: MaxCalleeData = %d; want >= 148", info.MaxCalleeData)
	}
	for _, f := range []struct {
		name string
		flag nd.AdapterFlags
	}{
		{"AdapterInOrderDMA", nd.AdapterInOrderDMA},
		{"AdapterLoopbackConnections", nd.AdapterLoopbackConnections},
	} {
		if info.Flags&f.flag == 0 {
			t.Errorf("Query: Flags %#x lack %s", uint32(info.Flags), f.name)
		}
	}
	// The suite's DefaultLimits must fit the adapter.
	l := DefaultLimits
	if l.InboundEntries > info.MaxInboundRequests || l.OutboundEntries > info.MaxOutboundRequests ||
		l.InboundSGE > info.MaxInboundSGE || l.OutboundSGE > info.MaxOutboundSGE ||
		l.InboundReadLimit > info.MaxInboundReadLimit || l.OutboundReadLimit > info.MaxOutboundReadLimit {
		t.Errorf("Query: the adapter (%+v) cannot serve the suite's DefaultLimits %+v", info, l)
	}
	// Query is repeatable.
	if again := query(t, a); again != info {
		t.Errorf("Query changed between calls: %+v then %+v", info, again)
	}
}

func testAdapterClosed(t *testing.T, p nd.Provider) {
	addrs, err := p.Addresses()
	if err != nil || len(addrs) == 0 {
		t.Fatalf("Addresses() = %v, %v", addrs, err)
	}
	a := openAdapter(t, p, addrs[0])
	peer := openAdapter(t, p, addrs[0])
	l := listen(t, peer, 0)
	// Objects made before Close.
	s := side(t, a)
	c := mustConnector(t, a)
	cq := mustCQ(t, a, 16)
	if err := a.Close(); err != nil {
		t.Fatalf("Adapter.Close: %v", err)
	}
	ctx := ctx(t)
	_, err = a.Query()
	expectStatus(t, "Query after Close", err, nd.ErrDeviceRemoved)
	cq2, err := a.CreateCompletionQueue(1)
	if err == nil {
		cq2.Close()
	}
	expectStatus(t, "CreateCompletionQueue after Close", err, nd.ErrDeviceRemoved)
	c2, err := a.CreateConnector()
	if err == nil {
		c2.Close()
	}
	expectStatus(t, "CreateConnector after Close", err, nd.ErrDeviceRemoved)
	l2, err := a.Listen(0, Protocol, 0)
	if err == nil {
		l2.Close()
	}
	expectStatus(t, "Listen after Close", err, nd.ErrDeviceRemoved)
	buf := make([]byte, 64)
	mr, err := a.RegisterMemory(ctx, buf)
	if err == nil {
		a.DeregisterMemory(ctx, mr)
	}
	expectStatus(t, "RegisterMemory after Close", err, nd.ErrDeviceRemoved)
	mw, err := a.CreateMemoryWindow(nil)
	if err == nil {
		mw.Close()
	}
	expectStatus(t, "CreateMemoryWindow after Close", err, nd.ErrDeviceRemoved)
	ep, err := c.CreateEndpoint(cq, cq, DefaultLimits)
	if err == nil {
		ep.Close()
	}
	expectStatus(t, "Connector.CreateEndpoint after Adapter.Close", err, nd.ErrDeviceRemoved)
	err = s.Connector.Connect(ctx, s.Endpoint, addrOf(peer, l), Protocol, 0, nil)
	expectStatus(t, "Connector.Connect after Adapter.Close", err, nd.ErrDeviceRemoved)
}
