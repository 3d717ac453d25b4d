package ndtest

import (
	"bytes"
	"net/netip"
	"slices"
	"testing"

	"github.com/godirect/nd"
)

// connectionCases check the handshake between a Connector and a Listener:
// private data and read limits, addresses, connection data, refusal and
// rejection. The group goes on with listenerCases, connectionMisuseCases
// and connectionScaleCases.
var connectionCases = []testCase{
	{"Handshake/PrivateDataAndReadLimits", `docs/semantics.md "read limits": each side's private data reaches the other, and the read limits are negotiated down to the peer's`, testHandshake},
	{"Handshake/Addresses", `docs/semantics.md "GetLocalAddress, GetPeerAddress": each side of a connection reports the other's address as its peer's`, testHandshakeAddresses},
	{"GetConnectionData/SizeProtocol", `docs/semantics.md "private data": a buffer too small for the private data gets its prefix and ND_BUFFER_OVERFLOW, with the size needed`, testConnDataSize},
	{"GetConnectionData/EmptyPrivateData", `docs/semantics.md "private data": a connection without private data reports none and the read limits`, testConnDataEmpty},
	{"GetConnectionData/NoPeer", `docs/semantics.md "private data": GetConnectionData on a connector with no peer fails ND_CONNECTION_INVALID`, connGetConnectionDataNoPeer},
	{"PrivateData/MaxCallerData", `docs/semantics.md "private data": Connect carries private data of MaxCallerData bytes`, connPrivateDataMaxCallerData},
	{"PrivateData/CallerDataTooLarge", `docs/semantics.md "private data": Connect with private data beyond MaxCallerData fails ND_INVALID_BUFFER_SIZE`, connPrivateDataCallerDataTooLarge},
	{"PrivateData/MaxCalleeData", `docs/semantics.md "private data": Accept carries private data of MaxCalleeData bytes`, connPrivateDataMaxCalleeData},
	{"PrivateData/CalleeDataTooLarge", `docs/semantics.md "private data": Accept with private data beyond MaxCalleeData fails ND_INVALID_BUFFER_SIZE`, connPrivateDataCalleeDataTooLarge},
	{"PrivateData/RejectDataTooLarge", `docs/semantics.md "private data": Reject with private data beyond MaxCalleeData fails ND_INVALID_BUFFER_SIZE`, testRejectDataTooLarge},
	{"PeerAddressBeforeAccept", `docs/semantics.md "GetLocalAddress, GetPeerAddress": the passive side knows its peer's address once it holds the request, before Accept`, testPeerAddressBeforeAccept},
	{"AddressesBeforeConnect", `docs/semantics.md "GetLocalAddress, GetPeerAddress": before a connection they fail ND_CONNECTION_INVALID`, connAddressesBeforeConnect},
	{"Refused/NoListener", `docs/semantics.md "refused Connect": a Connect to a port nobody listens on fails ND_CONNECTION_REFUSED`, connRefusedNoListener},
	{"Refused/OtherProtocol", `docs/semantics.md "protocol": a Connect naming another protocol than the listener's fails ND_CONNECTION_REFUSED`, connRefusedOtherProtocol},
	{"BadNetworkName", `docs/semantics.md "address no adapter serves": a Connect to an address no adapter serves fails ND_BAD_NETWORK_NAME`, testBadNetworkName},
	{"Reject/ByPassive", `docs/semantics.md "refused Connect": the passive side's Reject fails the active side's Connect with ND_CONNECTION_REFUSED, carrying the private data`, testRejectByPassive},
	{"Reject/ByActive", `docs/semantics.md "refused Connect": the active side may Reject after Connect instead of CompleteConnect; the passive side's Accept fails ND_CONNECTION_REFUSED`, testRejectByActive},
}

func connGetConnectionDataNoPeer(t *testing.T, p nd.Provider) {
	a, _ := OpenAdapters(t, p)
	_, err := mustConnector(t, a).GetConnectionData(make([]byte, 16))
	expectStatus(t, "GetConnectionData on a fresh connector", err, nd.ErrConnectionInvalid)
}

func connPrivateDataMaxCallerData(t *testing.T, p nd.Provider) {
	testPrivateDataLimit(t, p, true, 0)
}

func connPrivateDataCallerDataTooLarge(t *testing.T, p nd.Provider) {
	testPrivateDataLimit(t, p, true, 1)
}

func connPrivateDataMaxCalleeData(t *testing.T, p nd.Provider) {
	testPrivateDataLimit(t, p, false, 0)
}

func connPrivateDataCalleeDataTooLarge(t *testing.T, p nd.Provider) {
	testPrivateDataLimit(t, p, false, 1)
}

func connAddressesBeforeConnect(t *testing.T, p nd.Provider) {
	a, _ := OpenAdapters(t, p)
	s := side(t, a)
	_, err := s.Connector.GetLocalAddress()
	expectStatus(t, "GetLocalAddress before connecting", err, nd.ErrConnectionInvalid)
	_, err = s.Connector.GetPeerAddress()
	expectStatus(t, "GetPeerAddress before connecting", err, nd.ErrConnectionInvalid)
}

func connRefusedNoListener(t *testing.T, p nd.Provider) {
	a, b := OpenAdapters(t, p)
	l := listen(t, b, 0)
	remote := addrOf(b, l)
	if err := l.Close(); err != nil {
		t.Fatalf("Listener.Close: %v", err)
	}
	s := side(t, a)
	expectStatus(t, "Connect to a port nobody listens on", startConnect(t, s, remote, nil).wait(t), nd.ErrConnectionRefused)
}

func connRefusedOtherProtocol(t *testing.T, p nd.Provider) {
	a, b := OpenAdapters(t, p)
	l, err := b.Listen(0, Protocol+1, 0)
	if err != nil {
		t.Fatalf("Listen: %v", err)
	}
	defer l.Close()
	s := side(t, a)
	expectStatus(t, "Connect naming another protocol than the listener's", startConnect(t, s, addrOf(b, l), nil).wait(t), nd.ErrConnectionRefused)
}

// handshake is a connection in progress: the active side has called
// Connect and the passive side holds the request.
type handshake struct {
	active, passive *Side
	l               nd.Listener
	conn            *call // the active side's Connect
}

// request starts a Connect from active (already created on a) to a new
// listener on b with private data pd, and waits until the passive side's
// GetConnectionRequest returned it.
func request(t testing.TB, active *Side, b nd.Adapter, pd []byte) *handshake {
	t.Helper()
	h := &handshake{active: active, l: listen(t, b, 0), passive: passiveSide(t, b)}
	req := startGetRequest(t, h.l, h.passive)
	h.conn = startConnect(t, active, addrOf(b, h.l), pd)
	expectStatus(t, "GetConnectionRequest", req.wait(t), nd.Success)
	return h
}

// expectConnData checks GetConnectionData of c against the wanted private
// data and read limits.
func expectConnData(t testing.TB, who string, c nd.Connector, pd []byte, in, out int) {
	t.Helper()
	buf := bytes.Repeat([]byte{0xEE}, len(pd)+16)
	cd, err := c.GetConnectionData(buf)
	expectStatus(t, who+" GetConnectionData", err, nd.Success)
	if cd.PrivateDataLength != len(pd) {
		t.Fatalf("%s GetConnectionData: PrivateDataLength = %d; want %d", who, cd.PrivateDataLength, len(pd))
	}
	if !bytes.Equal(buf[:len(pd)], pd) {
		t.Fatalf("%s GetConnectionData: private data %q; want %q", who, buf[:len(pd)], pd)
	}
	if cd.InboundReadLimit != in || cd.OutboundReadLimit != out {
		t.Fatalf("%s GetConnectionData: read limits in %d out %d; want in %d out %d",
			who, cd.InboundReadLimit, cd.OutboundReadLimit, in, out)
	}
}

func testHandshake(t *testing.T, p nd.Provider) {
	a, b := OpenAdapters(t, p)
	ia, ib := query(t, a), query(t, b)
	if min(ia.MaxInboundReadLimit, ia.MaxOutboundReadLimit, ib.MaxInboundReadLimit, ib.MaxOutboundReadLimit) < 3 {
		t.Skip("the adapters allow fewer than 3 Reads in flight; the case needs 3 to tell the limits apart")
	}
	// Active: serves 3 incoming Reads, issues 2. Passive: serves 2 (all the
	// active side issues), issues 1 (fewer than the active side serves), so
	// the negotiation keeps the passive side's values.
	al := DefaultLimits
	al.InboundReadLimit, al.OutboundReadLimit = 3, 2
	pl := DefaultLimits
	pl.InboundReadLimit, pl.OutboundReadLimit = 2, 1
	callerPD := []byte("caller: rank 7 wants a connection")
	calleePD := []byte("callee: rank 3 accepts, with some more private data")

	active := NewSide(t, a, al, 64, false)
	h := request(t, active, b, callerPD)
	// Passive point of view: inbound = the active side's outbound, outbound =
	// the active side's inbound.
	expectConnData(t, "passive", h.passive.Connector, callerPD, 2, 3)
	addEndpoint(t, h.passive, pl)
	msg := newBuffer(t, h.passive, 64)
	var rr nd.Result
	recvBuf(t, h.passive, msg, &rr)
	acc := startAccept(t, h.passive, calleePD)
	expectStatus(t, "Connect", h.conn.wait(t), nd.Success)
	acc.notReturned(t, "Accept returns only after CompleteConnect")
	expectConnData(t, "active", active.Connector, calleePD, 1, 2)
	expectStatus(t, "CompleteConnect", active.Connector.CompleteConnect(ctx(t)), nd.Success)
	expectStatus(t, "Accept", acc.wait(t), nd.Success)

	// The connection carries data.
	out := newBuffer(t, active, 64)
	fillPattern(out.b, 42)
	var sr nd.Result
	sendBuf(t, active, out, &sr, 0)
	Expect(t, active.OutCQ, &sr, nd.Success, 64)
	Expect(t, h.passive.InCQ, &rr, nd.Success, 64)
	if !bytes.Equal(msg.b, out.b) {
		t.Fatal("the passive side received other bytes than the active side sent")
	}
}

func testHandshakeAddresses(t *testing.T, p nd.Provider) {
	a, b := OpenAdapters(t, p)
	active := side(t, a)
	l := listen(t, b, 0)
	passive := connectTo(t, active, b, l, nil)
	al, err := active.Connector.GetLocalAddress()
	expectStatus(t, "active GetLocalAddress", err, nd.Success)
	ap, err := active.Connector.GetPeerAddress()
	expectStatus(t, "active GetPeerAddress", err, nd.Success)
	pl, err := passive.Connector.GetLocalAddress()
	expectStatus(t, "passive GetLocalAddress", err, nd.Success)
	pp, err := passive.Connector.GetPeerAddress()
	expectStatus(t, "passive GetPeerAddress", err, nd.Success)
	if al.Addr() != a.Address() || al.Port() == 0 {
		t.Errorf("active GetLocalAddress = %v; want %v with a non-zero port", al, a.Address())
	}
	if ap != addrOf(b, l) {
		t.Errorf("active GetPeerAddress = %v; want the address connected to, %v", ap, addrOf(b, l))
	}
	if pp != al {
		t.Errorf("passive GetPeerAddress = %v; want the active side's local address %v", pp, al)
	}
	if pl != ap {
		t.Errorf("passive GetLocalAddress = %v; want the active side's peer address %v", pl, ap)
	}
}

// checkSizeProtocol checks GetConnectionData's private-data size protocol
// on c, whose peer sent pd (at least 2 bytes).
func checkSizeProtocol(t testing.TB, who string, c nd.Connector, pd []byte) {
	t.Helper()
	cd, err := c.GetConnectionData(nil)
	expectStatus(t, who+" GetConnectionData(nil)", err, nd.ErrBufferOverflow)
	if cd.PrivateDataLength != len(pd) {
		t.Fatalf("%s GetConnectionData(nil): PrivateDataLength = %d; want %d", who, cd.PrivateDataLength, len(pd))
	}
	short := bytes.Repeat([]byte{0xEE}, len(pd)/2)
	cd, err = c.GetConnectionData(short)
	expectStatus(t, who+" GetConnectionData(short buffer)", err, nd.ErrBufferOverflow)
	if cd.PrivateDataLength != len(pd) {
		t.Fatalf("%s GetConnectionData(%d bytes): PrivateDataLength = %d; want %d", who, len(short), cd.PrivateDataLength, len(pd))
	}
	if !bytes.Equal(short, pd[:len(short)]) {
		t.Fatalf("%s GetConnectionData(%d bytes) copied %q; want the prefix %q", who, len(short), short, pd[:len(short)])
	}
	exact := make([]byte, len(pd))
	cd, err = c.GetConnectionData(exact)
	expectStatus(t, who+" GetConnectionData(exact buffer)", err, nd.Success)
	if cd.PrivateDataLength != len(pd) || !bytes.Equal(exact, pd) {
		t.Fatalf("%s GetConnectionData(exact) = %q (length %d); want %q", who, exact, cd.PrivateDataLength, pd)
	}
	big := bytes.Repeat([]byte{0xEE}, len(pd)+10)
	cd, err = c.GetConnectionData(big)
	expectStatus(t, who+" GetConnectionData(big buffer)", err, nd.Success)
	if cd.PrivateDataLength != len(pd) || !bytes.Equal(big[:len(pd)], pd) {
		t.Fatalf("%s GetConnectionData(big) = %q (length %d); want %q", who, big[:len(pd)], cd.PrivateDataLength, pd)
	}
	if !bytes.Equal(big[len(pd):], bytes.Repeat([]byte{0xEE}, 10)) {
		t.Fatalf("%s GetConnectionData wrote past the private data: %x", who, big[len(pd):])
	}
}

func testConnDataSize(t *testing.T, p nd.Provider) {
	a, b := OpenAdapters(t, p)
	callerPD := []byte("0123456789abcdefghijklmnopqrstuvwxyz")
	calleePD := []byte("the callee's reply, longer than the caller's private data")
	h := request(t, side(t, a), b, callerPD)
	checkSizeProtocol(t, "passive", h.passive.Connector, callerPD)
	addEndpoint(t, h.passive, DefaultLimits)
	acc := startAccept(t, h.passive, calleePD)
	expectStatus(t, "Connect", h.conn.wait(t), nd.Success)
	checkSizeProtocol(t, "active", h.active.Connector, calleePD)
	expectStatus(t, "CompleteConnect", h.active.Connector.CompleteConnect(ctx(t)), nd.Success)
	expectStatus(t, "Accept", acc.wait(t), nd.Success)
}

func testConnDataEmpty(t *testing.T, p nd.Provider) {
	a, b := OpenAdapters(t, p)
	h := request(t, side(t, a), b, nil)
	cd, err := h.passive.Connector.GetConnectionData(nil)
	expectStatus(t, "passive GetConnectionData(nil) without private data", err, nd.Success)
	if cd.PrivateDataLength != 0 {
		t.Fatalf("PrivateDataLength = %d; want 0", cd.PrivateDataLength)
	}
	addEndpoint(t, h.passive, DefaultLimits)
	acc := startAccept(t, h.passive, nil)
	expectStatus(t, "Connect", h.conn.wait(t), nd.Success)
	cd, err = h.active.Connector.GetConnectionData(nil)
	expectStatus(t, "active GetConnectionData(nil) without private data", err, nd.Success)
	if cd.PrivateDataLength != 0 {
		t.Fatalf("PrivateDataLength = %d; want 0", cd.PrivateDataLength)
	}
	expectStatus(t, "CompleteConnect", h.active.Connector.CompleteConnect(ctx(t)), nd.Success)
	expectStatus(t, "Accept", acc.wait(t), nd.Success)
}

// testPrivateDataLimit connects with private data of MaxCallerData+extra
// bytes (caller) or accepts with MaxCalleeData+extra bytes (callee).
func testPrivateDataLimit(t *testing.T, p nd.Provider, caller bool, extra int) {
	a, b := OpenAdapters(t, p)
	info := query(t, a)
	if !caller {
		info = query(t, b)
	}
	n := info.MaxCalleeData + extra
	if caller {
		n = info.MaxCallerData + extra
	}
	pd := make([]byte, n)
	fillPattern(pd, 9)
	active := side(t, a)
	if caller {
		l := listen(t, b, 0)
		passive := passiveSide(t, b)
		if extra > 0 {
			err := active.Connector.Connect(ctx(t), active.Endpoint, addrOf(b, l), Protocol, 0, pd)
			expectStatus(t, "Connect with MaxCallerData+1 bytes of private data", err, nd.ErrInvalidBufferSize)
			return
		}
		req := startGetRequest(t, l, passive)
		conn := startConnect(t, active, addrOf(b, l), pd)
		expectStatus(t, "GetConnectionRequest", req.wait(t), nd.Success)
		expectConnData(t, "passive", passive.Connector, pd, DefaultLimits.OutboundReadLimit, DefaultLimits.InboundReadLimit)
		addEndpoint(t, passive, DefaultLimits)
		acc := startAccept(t, passive, nil)
		expectStatus(t, "Connect with MaxCallerData bytes of private data", conn.wait(t), nd.Success)
		expectStatus(t, "CompleteConnect", active.Connector.CompleteConnect(ctx(t)), nd.Success)
		expectStatus(t, "Accept", acc.wait(t), nd.Success)
		return
	}
	h := request(t, active, b, nil)
	addEndpoint(t, h.passive, DefaultLimits)
	if extra > 0 {
		err := h.passive.Connector.Accept(ctx(t), h.passive.Endpoint, pd)
		expectStatus(t, "Accept with MaxCalleeData+1 bytes of private data", err, nd.ErrInvalidBufferSize)
		h.conn.notReturned(t, "a refused Accept sends nothing")
		// The request is still held: refuse it properly.
		expectStatus(t, "Reject after the failed Accept", h.passive.Connector.Reject(nil), nd.Success)
		expectStatus(t, "Connect", h.conn.wait(t), nd.ErrConnectionRefused)
		return
	}
	acc := startAccept(t, h.passive, pd)
	expectStatus(t, "Connect", h.conn.wait(t), nd.Success)
	expectConnData(t, "active", active.Connector, pd, DefaultLimits.OutboundReadLimit, DefaultLimits.InboundReadLimit)
	expectStatus(t, "CompleteConnect", active.Connector.CompleteConnect(ctx(t)), nd.Success)
	expectStatus(t, "Accept with MaxCalleeData bytes of private data", acc.wait(t), nd.Success)
}

func testRejectDataTooLarge(t *testing.T, p nd.Provider) {
	a, b := OpenAdapters(t, p)
	h := request(t, side(t, a), b, nil)
	pd := make([]byte, query(t, b).MaxCalleeData+1)
	expectStatus(t, "Reject with MaxCalleeData+1 bytes of private data", h.passive.Connector.Reject(pd), nd.ErrInvalidBufferSize)
	expectStatus(t, "Reject with MaxCalleeData bytes", h.passive.Connector.Reject(pd[:len(pd)-1]), nd.Success)
	expectStatus(t, "Connect", h.conn.wait(t), nd.ErrConnectionRefused)
}

func testPeerAddressBeforeAccept(t *testing.T, p nd.Provider) {
	a, b := OpenAdapters(t, p)
	h := request(t, side(t, a), b, nil)
	peer, err := h.passive.Connector.GetPeerAddress()
	expectStatus(t, "passive GetPeerAddress after GetConnectionRequest, before Accept", err, nd.Success)
	if peer.Addr() != a.Address() || peer.Port() == 0 {
		t.Fatalf("passive GetPeerAddress = %v; want %v with a non-zero port", peer, a.Address())
	}
	addEndpoint(t, h.passive, DefaultLimits)
	acc := startAccept(t, h.passive, nil)
	expectStatus(t, "Connect", h.conn.wait(t), nd.Success)
	local, err := h.active.Connector.GetLocalAddress()
	expectStatus(t, "active GetLocalAddress", err, nd.Success)
	if local != peer {
		t.Fatalf("active GetLocalAddress = %v; the passive side saw the peer %v", local, peer)
	}
	expectStatus(t, "CompleteConnect", h.active.Connector.CompleteConnect(ctx(t)), nd.Success)
	expectStatus(t, "Accept", acc.wait(t), nd.Success)
}

// OpenNetwork is what a provider implements, returning true, when its
// adapters sit on an open network (IP over TCP, say) where an address no
// adapter serves cannot be told from a host where nobody listens: Connect
// then reports ErrConnectionRefused for both, and the suite skips the
// STATUS_BAD_NETWORK_NAME case.
type OpenNetwork interface {
	OpenNetwork() bool
}

func testBadNetworkName(t *testing.T, p nd.Provider) {
	if o, ok := p.(OpenNetwork); ok && o.OpenNetwork() {
		t.Skip("the provider is on an open network: an address no adapter serves looks like a host where nobody listens")
	}
	addrs, err := p.Addresses()
	if err != nil {
		t.Fatalf("Addresses: %v", err)
	}
	// A loopback address never leaves the host, so even a network transport
	// can be asked about it safely.
	var target netip.Addr
	for _, s := range []string{"127.0.0.250", "127.1.2.250", "127.254.254.250"} {
		if a := netip.MustParseAddr(s); !slices.Contains(addrs, a) {
			target = a
			break
		}
	}
	if !target.IsValid() {
		t.Skip("the provider serves every candidate loopback address; no unserved address is safe to contact")
	}
	a, _ := OpenAdapters(t, p)
	s := side(t, a)
	err = startConnect(t, s, netip.AddrPortFrom(target, 54321), nil).wait(t)
	expectStatus(t, "Connect to "+target.String()+", which no adapter serves", err, nd.ErrBadNetworkName)
}

func testRejectByPassive(t *testing.T, p nd.Provider) {
	a, b := OpenAdapters(t, p)
	h := request(t, side(t, a), b, []byte("please"))
	rejectPD := []byte("no: rank 1 is already connected to you")
	expectStatus(t, "passive Reject", h.passive.Connector.Reject(rejectPD), nd.Success)
	expectStatus(t, "Connect to a peer that rejects", h.conn.wait(t), nd.ErrConnectionRefused)
	buf := make([]byte, 256)
	cd, err := h.active.Connector.GetConnectionData(buf)
	expectStatus(t, "active GetConnectionData after the refusal", err, nd.Success)
	if got := buf[:cd.PrivateDataLength]; !bytes.Equal(got, rejectPD) {
		t.Fatalf("reject private data = %q; want %q", got, rejectPD)
	}
	expectStatus(t, "CompleteConnect after a refused Connect", h.active.Connector.CompleteConnect(ctx(t)), nd.ErrConnectionInvalid)
}

func testRejectByActive(t *testing.T, p nd.Provider) {
	a, b := OpenAdapters(t, p)
	h := request(t, side(t, a), b, nil)
	addEndpoint(t, h.passive, DefaultLimits)
	acc := startAccept(t, h.passive, []byte("terms"))
	expectStatus(t, "Connect", h.conn.wait(t), nd.Success)
	expectStatus(t, "active Reject after Connect", h.active.Connector.Reject(nil), nd.Success)
	expectStatus(t, "Accept refused by the active side", acc.wait(t), nd.ErrConnectionRefused)
}
