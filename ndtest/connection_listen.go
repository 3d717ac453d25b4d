package ndtest

import (
	"bytes"
	"testing"

	"github.com/godirect/nd"
)

// listenerCases check a Listener: closing it, the FIFO hand-out of
// requests, its backlog, and canceling GetConnectionRequest.
var listenerCases = []testCase{
	{"ListenerClosed/LaterConnectRefused", `docs/semantics.md "refused Connect": after a listener closes, a Connect to its port is refused`, listenerListenerClosedLaterConnectRefused},
	{"ListenerClosed/WaitingGetConnectionRequestCanceled", `docs/semantics.md "Listener": closing the listener completes a waiting GetConnectionRequest with ND_CANCELED`, listenerListenerClosedWaitingGetConnectionRequestCanceled},
	{"GetConnectionRequest/ContextCanceled", `docs/semantics.md "cancel": a canceled GetConnectionRequest returns ND_CANCELED and the listener keeps working`, listenerGetConnectionRequestContextCanceled},
	{"GetConnectionRequest/FIFO", `docs/semantics.md "connection requests": requests are handed out in the order they arrived`, testRequestFIFO},
	{"Backlog/SecondConnectRefused", `docs/semantics.md "connection requests": a Connect beyond the listener's backlog is refused`, testBacklog},
}

func listenerListenerClosedLaterConnectRefused(t *testing.T, p nd.Provider) {
	a, b := OpenAdapters(t, p)
	l := listen(t, b, 0)
	// The listener works before it closes.
	connectTo(t, side(t, a), b, l, nil)
	if err := l.Close(); err != nil {
		t.Fatalf("Listener.Close: %v", err)
	}
	err := startConnect(t, side(t, a), addrOf(b, l), nil).wait(t)
	expectStatus(t, "Connect after the listener closed", err, nd.ErrConnectionRefused)
}

func listenerListenerClosedWaitingGetConnectionRequestCanceled(t *testing.T, p nd.Provider) {
	_, b := OpenAdapters(t, p)
	l := listen(t, b, 0)
	req := startGetRequest(t, l, passiveSide(t, b))
	req.parked(t)
	if err := l.Close(); err != nil {
		t.Fatalf("Listener.Close: %v", err)
	}
	expectStatus(t, "GetConnectionRequest waiting across Listener.Close", req.wait(t), nd.ErrCanceled)
}

func listenerGetConnectionRequestContextCanceled(t *testing.T, p nd.Provider) {
	a, b := OpenAdapters(t, p)
	l := listen(t, b, 0)
	c, cancel := cancelableCtx(t)
	ps := passiveSide(t, b)
	req := start("GetConnectionRequest", func() error { return l.GetConnectionRequest(c, ps.Connector) })
	req.parked(t)
	cancel()
	expectCanceled(t, "GetConnectionRequest with its context canceled", req.wait(t))
	// The listener still serves requests.
	connectTo(t, side(t, a), b, l, nil)
}

func testRequestFIFO(t *testing.T, p nd.Provider) {
	a, b := OpenAdapters(t, p)
	l := listen(t, b, 0)
	const n = 3
	var sides [n]*Side
	var reqs [n]*call
	order := make(chan int, n)
	for i := range n {
		sides[i] = passiveSide(t, b)
		c, s := ctx(t), sides[i]
		reqs[i] = start("GetConnectionRequest", func() error {
			err := l.GetConnectionRequest(c, s.Connector)
			order <- i
			return err
		})
		reqs[i].parked(t) // strictly ordered waiters
	}
	for i := range n {
		pd := []byte{'r', 'e', 'q', byte('0' + i)}
		conn := startConnect(t, side(t, a), addrOf(b, l), pd)
		var got int
		select {
		case got = <-order:
		case <-conn.done:
			t.Fatalf("Connect #%d returned %v before any GetConnectionRequest was served", i, conn.err)
		}
		if got != i {
			t.Fatalf("request #%d was handed to GetConnectionRequest #%d; want #%d (first come, first served)", i, got, i)
		}
		expectStatus(t, "GetConnectionRequest", reqs[i].wait(t), nd.Success)
		buf := make([]byte, 16)
		cd, err := sides[i].Connector.GetConnectionData(buf)
		expectStatus(t, "GetConnectionData", err, nd.Success)
		if !bytes.Equal(buf[:cd.PrivateDataLength], pd) {
			t.Fatalf("GetConnectionRequest #%d got private data %q; want %q", i, buf[:cd.PrivateDataLength], pd)
		}
		for j := i + 1; j < n; j++ {
			reqs[j].notReturned(t, "only one request has arrived for it")
		}
		expectStatus(t, "Reject", sides[i].Connector.Reject(nil), nd.Success)
		expectStatus(t, "Connect", conn.wait(t), nd.ErrConnectionRefused)
	}
}

func testBacklog(t *testing.T, p nd.Provider) {
	a, b := OpenAdapters(t, p)
	l := listen(t, b, 1)
	pds := [2][]byte{[]byte("first"), []byte("second")}
	var conns [2]*call
	var actives [2]*Side
	for i := range actives {
		actives[i] = side(t, a)
	}
	for i := range conns {
		conns[i] = startConnect(t, actives[i], addrOf(b, l), pds[i])
	}
	// With no GetConnectionRequest waiting, one request fills the backlog
	// and the other is refused; which one depends on arrival order.
	var refused, queued int
	select {
	case <-conns[0].done:
		refused, queued = 0, 1
	case <-conns[1].done:
		refused, queued = 1, 0
	case <-ctx(t).Done():
		t.Fatal("neither Connect returned: a backlog of 1 must refuse one of two requests")
	}
	expectStatus(t, "Connect beyond the backlog", conns[refused].wait(t), nd.ErrConnectionRefused)
	conns[queued].notReturned(t, "a request in the backlog waits for GetConnectionRequest")
	ps := passiveSide(t, b)
	expectStatus(t, "GetConnectionRequest", startGetRequest(t, l, ps).wait(t), nd.Success)
	buf := make([]byte, 16)
	cd, err := ps.Connector.GetConnectionData(buf)
	expectStatus(t, "GetConnectionData", err, nd.Success)
	if got := buf[:cd.PrivateDataLength]; !bytes.Equal(got, pds[queued]) {
		t.Fatalf("the backlog held the request %q; want %q (the one not refused)", got, pds[queued])
	}
	addEndpoint(t, ps, DefaultLimits)
	acc := startAccept(t, ps, nil)
	expectStatus(t, "Connect of the queued request", conns[queued].wait(t), nd.Success)
	expectStatus(t, "CompleteConnect", actives[queued].Connector.CompleteConnect(ctx(t)), nd.Success)
	expectStatus(t, "Accept", acc.wait(t), nd.Success)
}
