package ndtest

import (
	"bytes"
	"testing"

	"github.com/godirect/nd"
)

// connectionMisuseCases check a Connector used out of order (a second
// Connect, an endpoint of another connector, CompleteConnect alone, a
// local port in use) and a canceled Connect.
var connectionMisuseCases = []testCase{
	{"DualConnection/ConnectWhileConnecting", `docs/semantics.md "second Connect": a second Connect while the first is in progress fails ND_CONNECTION_ACTIVE, and the first completes`, misuseDualConnectionConnectWhileConnecting},
	{"DualConnection/ConnectWhenConnected", `docs/semantics.md "second Connect": Connect on a connected connector fails ND_CONNECTION_ACTIVE`, misuseDualConnectionConnectWhenConnected},
	{"LocalPortInUse", `docs/semantics.md "ports": a Connect from a local port another connection uses fails ND_ADDRESS_ALREADY_ASSOCIATED`, misuseLocalPortInUse},
	{"EndpointOfAnotherConnector", `docs/semantics.md "endpoint of another connector": the endpoint must be the connector's own (ND_INVALID_PARAMETER_1)`, misuseEndpointOfAnotherConnector},
	{"CompleteConnectWithoutConnect", `docs/semantics.md "CompleteConnect without Connect": outside the connecting state it fails ND_CONNECTION_INVALID`, misuseCompleteConnectWithoutConnect},
	{"ConnectCanceled/AfterRequestArrived", `docs/semantics.md "canceled Connect": a Connect canceled after its request arrived returns ND_CANCELED, and the passive side's Accept fails ND_CONNECTION_ABORTED`, misuseConnectCanceledAfterRequestArrived},
	{"ConnectCanceled/BeforeRequestServed", `docs/semantics.md "canceled Connect": a Connect canceled before the listener served it returns ND_CANCELED; an Accept of its request fails ND_CONNECTION_ABORTED and the listener serves the next`, misuseConnectCanceledBeforeRequestServed},
}

func misuseDualConnectionConnectWhileConnecting(t *testing.T, p nd.Provider) {
	a, b := OpenAdapters(t, p)
	h := request(t, side(t, a), b, nil)
	err := h.active.Connector.Connect(ctx(t), h.active.Endpoint, addrOf(b, h.l), Protocol, 0, nil)
	expectStatus(t, "second Connect while connecting", err, nd.ErrConnectionActive)
	// The first attempt is unaffected.
	addEndpoint(t, h.passive, DefaultLimits)
	acc := startAccept(t, h.passive, nil)
	expectStatus(t, "first Connect", h.conn.wait(t), nd.Success)
	expectStatus(t, "CompleteConnect", h.active.Connector.CompleteConnect(ctx(t)), nd.Success)
	expectStatus(t, "Accept", acc.wait(t), nd.Success)
}

func misuseDualConnectionConnectWhenConnected(t *testing.T, p nd.Provider) {
	a, b := OpenAdapters(t, p)
	active := side(t, a)
	l := listen(t, b, 0)
	connectTo(t, active, b, l, nil)
	err := active.Connector.Connect(ctx(t), active.Endpoint, addrOf(b, l), Protocol, 0, nil)
	expectStatus(t, "Connect on a connected connector", err, nd.ErrConnectionActive)
}

func misuseLocalPortInUse(t *testing.T, p nd.Provider) {
	a, b := OpenAdapters(t, p)
	active := side(t, a)
	l := listen(t, b, 0)
	connectTo(t, active, b, l, nil)
	local, err := active.Connector.GetLocalAddress()
	expectStatus(t, "GetLocalAddress", err, nd.Success)
	s := side(t, a)
	err = s.Connector.Connect(ctx(t), s.Endpoint, addrOf(b, l), Protocol, local.Port(), nil)
	expectStatus(t, "Connect from a local port another connection uses", err, nd.ErrAddressAlreadyAssociated)
}

func misuseEndpointOfAnotherConnector(t *testing.T, p nd.Provider) {
	a, b := OpenAdapters(t, p)
	l := listen(t, b, 0)
	other := side(t, a)
	c := mustConnector(t, a)
	err := c.Connect(ctx(t), other.Endpoint, addrOf(b, l), Protocol, 0, nil)
	expectStatus(t, "Connect with another connector's endpoint", err, nd.ErrInvalidParameter1)
}

func misuseCompleteConnectWithoutConnect(t *testing.T, p nd.Provider) {
	a, _ := OpenAdapters(t, p)
	s := side(t, a)
	expectStatus(t, "CompleteConnect without Connect", s.Connector.CompleteConnect(ctx(t)), nd.ErrConnectionInvalid)
}

func misuseConnectCanceledAfterRequestArrived(t *testing.T, p nd.Provider) {
	a, b := OpenAdapters(t, p)
	s := side(t, a)
	l := listen(t, b, 0)
	ps := passiveSide(t, b)
	req := startGetRequest(t, l, ps)
	c, cancel := cancelableCtx(t)
	conn := start("Connect", func() error { return s.Connector.Connect(c, s.Endpoint, addrOf(b, l), Protocol, 0, nil) })
	expectStatus(t, "GetConnectionRequest", req.wait(t), nd.Success)
	cancel()
	expectCanceled(t, "Connect with its context canceled", conn.wait(t))
	addEndpoint(t, ps, DefaultLimits)
	err := ps.Connector.Accept(ctx(t), ps.Endpoint, nil)
	expectStatus(t, "Accept of a request whose Connect was canceled", err, nd.ErrConnectionAborted)
}

func misuseConnectCanceledBeforeRequestServed(t *testing.T, p nd.Provider) {
	a, b := OpenAdapters(t, p)
	s := side(t, a)
	l := listen(t, b, 0)
	c, cancel := cancelableCtx(t)
	conn := start("Connect", func() error {
		return s.Connector.Connect(c, s.Endpoint, addrOf(b, l), Protocol, 0, []byte("canceled"))
	})
	conn.parked(t)
	cancel()
	expectCanceled(t, "Connect with its context canceled", conn.wait(t))
	// A later request is served; the canceled one either never shows up
	// or shows up aborted.
	s2 := side(t, a)
	conn2 := startConnect(t, s2, addrOf(b, l), []byte("later"))
	for range 2 {
		ps := passiveSide(t, b)
		expectStatus(t, "GetConnectionRequest", startGetRequest(t, l, ps).wait(t), nd.Success)
		buf := make([]byte, 16)
		cd, err := ps.Connector.GetConnectionData(buf)
		pd := buf[:cd.PrivateDataLength]
		addEndpoint(t, ps, DefaultLimits)
		if bytes.Equal(pd, []byte("canceled")) || nd.StatusOf(err) == nd.ErrConnectionAborted {
			err := ps.Connector.Accept(ctx(t), ps.Endpoint, nil)
			expectStatus(t, "Accept of the canceled request", err, nd.ErrConnectionAborted)
			continue
		}
		expectStatus(t, "GetConnectionData", err, nd.Success)
		if !bytes.Equal(pd, []byte("later")) {
			t.Fatalf("request with private data %q; want \"later\" or \"canceled\"", pd)
		}
		acc := startAccept(t, ps, nil)
		expectStatus(t, "Connect", conn2.wait(t), nd.Success)
		expectStatus(t, "CompleteConnect", s2.Connector.CompleteConnect(ctx(t)), nd.Success)
		expectStatus(t, "Accept", acc.wait(t), nd.Success)
		return
	}
	t.Fatal("the later request was not served")
}
