package ndexport

import (
	"net/netip"
	"testing"
	"time"
	"unsafe"

	"github.com/godirect/nd"
	"github.com/godirect/nd/internal/ndabi"
)

// v2Side is one side of an ND v2 connection driven through the objects as a
// consumer drives the COM interfaces.
type v2Side struct {
	ad   *Adapter2
	file File
	fh   uintptr
	cq   *CQ2
	qp   *QueuePair2
	conn *Connector2
	mr   *Region2
	buf  []byte
}

const qpContext = 0x5151

// release releases the side's objects, children first.
func (s *v2Side) release() {
	s.conn.Release()
	s.qp.Release()
	s.mr.Release()
	s.cq.Release()
	s.ad.Release()
}

func openV2(t *testing.T, tr *Transport) *v2Side {
	t.Helper()
	p := NewProvider2(tr)
	defer p.Release()
	var n uint32
	want(t, "QueryAddressList probe", p.QueryAddressList(nil, &n), nd.ErrBufferOverflow)
	list := make([]byte, n)
	want(t, "QueryAddressList", p.QueryAddressList(ptr(list), &n), nd.Success)
	addrs, ok := ndabi.ParseAddressList(list, uintptr(ptr(list)))
	if !ok || len(addrs) == 0 {
		t.Fatalf("address list %v %v", addrs, ok)
	}
	sa := sockaddr(netip.AddrPortFrom(addrs[0], 9))
	var id uint64
	want(t, "ResolveAddress", p.ResolveAddress(ptr(sa), uintptr(len(sa)), &id), nd.Success)
	other := sockaddr(netip.MustParseAddrPort("192.0.2.77:1"))
	var id2 uint64
	want(t, "ResolveAddress of a foreign address", p.ResolveAddress(ptr(other), uintptr(len(other)), &id2), nd.ErrInvalidAddress)
	if _, st := p.OpenAdapter(ndabi.IIDINDAdapter, id); st != nd.Status(ndabi.E_NOINTERFACE) {
		t.Fatalf("OpenAdapter for INDAdapter = %v", st)
	}
	if _, st := p.OpenAdapter(ndabi.IIDIND2Adapter, id+1000); st != nd.ErrInvalidParameter2 {
		t.Fatalf("OpenAdapter of an unknown id = %v", st)
	}
	ad, st := p.OpenAdapter(ndabi.IIDIND2Adapter, id)
	want(t, "OpenAdapter", st, nd.Success)
	s := &v2Side{ad: ad, buf: make([]byte, 8192)}
	want(t, "CreateOverlappedFile", ad.CreateOverlappedFile(&s.fh), nd.Success)
	s.file, _ = ad.file(s.fh)
	var info ndabi.AdapterInfo2
	n = 0
	want(t, "Query probe", ad.Query(nil, &n), nd.ErrBufferOverflow)
	if n != 96 {
		t.Fatalf("Query wants %d bytes", n)
	}
	info.InfoVersion = 7
	want(t, "Query of an unknown version", ad.Query(unsafe.Pointer(&info), &n), nd.ErrNotSupported)
	info.InfoVersion = ndabi.NDVersion2
	want(t, "Query", ad.Query(unsafe.Pointer(&info), &n), nd.Success)
	if info.AdapterID != id || info.MaxCompletionQueueDepth < 160 || info.MaxInitiatorQueueDepth < 32 || info.MaxReceiveQueueDepth < 128 ||
		info.AdapterFlags&ndabi.NDServiceFlags == 0 && info.AdapterFlags&uint32(nd.AdapterInOrderDMA) == 0 {
		t.Fatalf("Query = %+v", info)
	}
	if s.cq, st = ad.CreateCompletionQueue(ndabi.IIDIND2CompletionQueue, s.fh, 0); st != nd.ErrInvalidParameter3 {
		t.Fatalf("a completion queue of depth 0 = %v", st)
	}
	if s.cq, st = ad.CreateCompletionQueue(ndabi.IIDIND2CompletionQueue, s.fh+1, 64); st != nd.ErrInvalidParameter2 {
		t.Fatalf("a completion queue on a file not the adapter's = %v", st)
	}
	if s.cq, st = ad.CreateCompletionQueue(ndabi.IIDIND2CompletionQueue, s.fh, 256); st != nd.Success {
		t.Fatal(st)
	}
	if _, st := ad.CreateQueuePair(ndabi.IIDIND2QueuePair, s.cq, s.cq, qpContext, 1<<30, 16, 4, 4, 0); st != nd.ErrInvalidParameter5 {
		t.Fatalf("a receive depth beyond the adapter's = %v", st)
	}
	if _, st := ad.CreateQueuePair(ndabi.IIDIND2QueuePair, s.cq, s.cq, qpContext, 16, 16, 4, 4, 1<<20); st != nd.ErrInvalidParameter9 {
		t.Fatalf("an inline size beyond the adapter's = %v", st)
	}
	if _, st := ad.CreateQueuePair(ndabi.IIDIND2QueuePair, nil, s.cq, qpContext, 16, 16, 4, 4, 0); st != nd.ErrInvalidParameter2 {
		t.Fatalf("no receive completion queue = %v", st)
	}
	if s.qp, st = ad.CreateQueuePair(ndabi.IIDIND2QueuePair, s.cq, s.cq, qpContext, 16, 16, 4, 4, 64); st != nd.Success {
		t.Fatal(st)
	}
	if s.mr, st = ad.CreateMemoryRegion(ndabi.IIDIND2MemoryRegion, s.fh); st != nd.Success {
		t.Fatal(st)
	}
	var ov ndabi.Overlapped
	want(t, "Register", s.mr.Register(ptr(s.buf), uintptr(len(s.buf)), ndabi.MRFlagAllowLocalWrite|ndabi.MRFlagAllowRemoteRead|ndabi.MRFlagAllowRemoteWrite, &ov), nd.Pending)
	packet(t, s.file, &ov, nd.Success)
	finish(t, "Register", &s.mr.Base, &ov, nd.Success)
	if s.mr.GetLocalToken() == 0 || s.mr.GetRemoteToken() == 0 {
		t.Fatal("no tokens after Register")
	}
	if s.conn, st = ad.CreateConnector(ndabi.IIDIND2Connector, s.fh); st != nd.Success {
		t.Fatal(st)
	}
	return s
}

func (s *v2Side) sge(off, n int) ndabi.SGE2 {
	return ndabi.SGE2{Buffer: unsafe.Pointer(&s.buf[off]), BufferLength: uint32(n), MemoryRegionToken: s.mr.GetLocalToken()}
}

// reap takes one ND2_RESULT, waiting with Notify when there is none.
func (s *v2Side) reap(t *testing.T) ndabi.Result2 {
	t.Helper()
	var out [1]ndabi.Result2
	for s.cq.GetResults(out[:]) == 0 {
		var ov ndabi.Overlapped
		want(t, "Notify", s.cq.Notify(uint32(nd.NotifyAny), &ov), nd.Pending)
		if s.cq.GetResults(out[:]) == 1 {
			want(t, "CancelOverlappedRequests", s.cq.CancelOverlappedRequests(), nd.Success)
			st := s.cq.GetOverlappedResult(&ov, false)
			packet(t, s.file, &ov, st)
			break
		}
		st := s.cq.GetOverlappedResult(&ov, true)
		packet(t, s.file, &ov, st)
		want(t, "Notify's completion", st, nd.Success)
	}
	return out[0]
}

func (s *v2Side) expect(t *testing.T, ctx uintptr, typ uint32, st nd.Status, n uint32) {
	t.Helper()
	r := s.reap(t)
	if r.RequestContext != ctx || r.RequestType != typ || r.Status != uint32(st) || r.QueuePairContext != qpContext ||
		(typ == ndabi.RequestReceive && r.BytesTransferred != n) {
		t.Fatalf("completion %+v, want context %#x type %d status %v bytes %d", r, ctx, typ, st, n)
	}
}

// connectV2 connects cli to srv the ND v2 way: listener Bind and Listen,
// GetConnectionRequest, connector Bind and Connect, GetReadLimits and
// GetPrivateData, Accept with a queue pair made before, CompleteConnect.
func connectV2(t *testing.T, srv, cli *v2Side) *Listener2 {
	t.Helper()
	ls, st := srv.ad.CreateListener(ndabi.IIDIND2Listener, srv.fh)
	want(t, "CreateListener", st, nd.Success)
	var lov, cov, aov, ccov ndabi.Overlapped
	want(t, "GetConnectionRequest before Listen", ls.GetConnectionRequest(srv.conn, &lov), nd.ErrInvalidDeviceState)
	any := sockaddr(netip.AddrPortFrom(netip.IPv4Unspecified(), 0))
	want(t, "listener Bind", ls.Bind(ptr(any), uintptr(len(any))), nd.Success)
	want(t, "Listen", ls.Listen(0), nd.Success)
	var la [16]byte
	n := uint32(len(la))
	want(t, "listener GetLocalAddress", ls.GetLocalAddress(unsafe.Pointer(&la), &n), nd.Success)
	lap, _ := ndabi.ParseSockaddr(la[:n])
	if lap.Port() == 0 || lap.Addr() != srv.ad.addr {
		t.Fatalf("listener address %v", lap)
	}
	// A second listener on the same port.
	ls2, _ := srv.ad.CreateListener(ndabi.IIDIND2Listener, srv.fh)
	same := sockaddr(lap)
	want(t, "second listener on the port", ls2.Bind(ptr(same), uintptr(len(same))), nd.ErrAddressAlreadyAssociated)
	ls2.Release()

	want(t, "GetConnectionRequest", ls.GetConnectionRequest(srv.conn, &lov), nd.Pending)
	var pre [2]ndabi.SGE2
	pre[0], pre[1] = srv.sge(0, 32), srv.sge(32, 32)
	want(t, "Receive before the connection", srv.qp.Receive(0x1001, &pre[0], 2), nd.Success)

	local := sockaddr(netip.AddrPortFrom(cli.ad.addr, 0))
	want(t, "connector Bind", cli.conn.Bind(ptr(local), uintptr(len(local))), nd.Success)
	want(t, "second connector Bind", cli.conn.Bind(ptr(local), uintptr(len(local))), nd.ErrAddressAlreadyAssociated)
	dest := sockaddr(lap)
	hello := []byte("hello, passive side")
	want(t, "Connect", cli.conn.Connect(cli.qp, ptr(dest), uintptr(len(dest)), 4, 3, ptr(hello), uintptr(len(hello)), &cov), nd.Pending)
	var cov2 ndabi.Overlapped
	want(t, "a second Connect", cli.conn.Connect(cli.qp, ptr(dest), uintptr(len(dest)), 4, 3, nil, 0, &cov2), nd.ErrConnectionActive)
	finish(t, "GetConnectionRequest", &ls.Base, &lov, nd.Success)
	packet(t, srv.file, &lov, nd.Success)
	var ird, ord uint32
	want(t, "GetReadLimits", srv.conn.GetReadLimits(&ird, &ord), nd.Success)
	if ird != 3 || ord != 4 {
		t.Fatalf("read limits %d %d, want 3 4", ird, ord)
	}
	n = 0
	want(t, "GetPrivateData probe", srv.conn.GetPrivateData(nil, &n), nd.ErrBufferOverflow)
	pd := make([]byte, n)
	want(t, "GetPrivateData", srv.conn.GetPrivateData(ptr(pd), &n), nd.Success)
	if string(pd) != string(hello) {
		t.Fatalf("private data %q", pd)
	}
	var peer [16]byte
	n = 4
	want(t, "GetPeerAddress small", srv.conn.GetPeerAddress(unsafe.Pointer(&peer), &n), nd.ErrBufferOverflow)
	want(t, "GetPeerAddress", srv.conn.GetPeerAddress(unsafe.Pointer(&peer), &n), nd.Success)
	want(t, "Accept", srv.conn.Accept(srv.qp, 2, 2, nil, 0, &aov), nd.Pending)
	finish(t, "Connect", &cli.conn.Base, &cov, nd.Success)
	packet(t, cli.file, &cov, nd.Success)
	want(t, "active GetReadLimits", cli.conn.GetReadLimits(&ird, &ord), nd.Success)
	if ird != 2 || ord != 2 {
		t.Fatalf("accepted read limits %d %d, want 2 2", ird, ord)
	}
	want(t, "CompleteConnect", cli.conn.CompleteConnect(&ccov), nd.Pending)
	finish(t, "CompleteConnect", &cli.conn.Base, &ccov, nd.Success)
	packet(t, cli.file, &ccov, nd.Success)
	finish(t, "Accept", &srv.conn.Base, &aov, nd.Success)
	packet(t, srv.file, &aov, nd.Success)
	n = 16
	want(t, "GetLocalAddress", cli.conn.GetLocalAddress(unsafe.Pointer(&peer), &n), nd.Success)

	copy(cli.buf, "first message across")
	one := cli.sge(0, 20)
	want(t, "Send", cli.qp.Send(0x2001, &one, 1, 0), nd.Success)
	cli.expect(t, 0x2001, ndabi.RequestSend, nd.Success, 0)
	srv.expect(t, 0x1001, ndabi.RequestReceive, nd.Success, 20)
	if string(srv.buf[:20]) != "first message across" {
		t.Fatalf("received %q", srv.buf[:20])
	}
	return ls
}

// TestV2 drives a whole ND v2 session over each transport: the handshake,
// Sends inline and silent, a window and the region's own remote token
// read and written, flags refused by position, the peer's disconnect, and
// the objects released in any order.
func TestV2(t *testing.T) {
	for _, tr := range transports(t) {
		t.Run(tr.Name, func(t *testing.T) {
			base := Live()
			srv, cli := openV2(t, tr), openV2(t, tr)
			ls := connectV2(t, srv, cli)

			// Inline: the consumer's bytes are copied at the post (no
			// token needed), and silent requests produce no completion.
			inl := []byte("inline!")
			isge := ndabi.SGE2{Buffer: ptr(inl), BufferLength: uint32(len(inl))}
			r := srv.sge(100, 64)
			want(t, "Receive", srv.qp.Receive(0x1002, &r, 1), nd.Success)
			r2 := srv.sge(200, 64)
			want(t, "Receive", srv.qp.Receive(0x1003, &r2, 1), nd.Success)
			want(t, "Send with an unknown flag", cli.qp.Send(1, &isge, 1, 0x100), nd.ErrInvalidParameter4)
			want(t, "Send inline silent", cli.qp.Send(0x2002, &isge, 1, uint32(nd.FlagSilentSuccess)|ndabi.OpFlagInline), nd.Success)
			inl[0] = 'X' // the post copied it
			s2 := cli.sge(300, 5)
			copy(cli.buf[300:], "after")
			want(t, "Send", cli.qp.Send(0x2003, &s2, 1, 0), nd.Success)
			cli.expect(t, 0x2003, ndabi.RequestSend, nd.Success, 0) // the silent one produced nothing
			srv.expect(t, 0x1002, ndabi.RequestReceive, nd.Success, 7)
			srv.expect(t, 0x1003, ndabi.RequestReceive, nd.Success, 5)
			if string(srv.buf[100:107]) != "inline!" || string(srv.buf[200:205]) != "after" {
				t.Fatalf("received %q %q", srv.buf[100:107], srv.buf[200:205])
			}

			// A window: its token is good as soon as Bind returns.
			mw, st := srv.ad.CreateMemoryWindow(ndabi.IIDIND2MemoryWindow)
			want(t, "CreateMemoryWindow", st, nd.Success)
			want(t, "Bind", srv.qp.Bind(0x3001, srv.mr, mw, unsafe.Pointer(&srv.buf[4096]), 1024, uint32(nd.FlagAllowRead|nd.FlagAllowWrite)), nd.Success)
			token := mw.GetRemoteToken()
			if token == 0 {
				t.Fatal("no window token after Bind")
			}
			srv.expect(t, 0x3001, ndabi.RequestBind, nd.Success, 0)
			copy(cli.buf[1000:], "one-sided")
			w := cli.sge(1000, 9)
			base4096 := uint64(uintptr(unsafe.Pointer(&srv.buf[4096])))
			want(t, "Write with an unknown flag", cli.qp.Write(1, &w, 1, base4096, token, 0x4), nd.ErrInvalidParameter6)
			want(t, "Write", cli.qp.Write(0x2004, &w, 1, base4096+10, token, 0), nd.Success)
			cli.expect(t, 0x2004, ndabi.RequestWrite, nd.Success, 0)
			if string(srv.buf[4106:4115]) != "one-sided" {
				t.Fatalf("window holds %q", srv.buf[4106:4115])
			}
			// The region's own remote token: the whole buffer.
			rd := cli.sge(2000, 20)
			want(t, "Read through the region's token", cli.qp.Read(0x2005, &rd, 1, uint64(uintptr(unsafe.Pointer(&srv.buf[0]))), srv.mr.GetRemoteToken(), 0), nd.Success)
			cli.expect(t, 0x2005, ndabi.RequestRead, nd.Success, 0)
			if string(cli.buf[2000:2020]) != "first message across" {
				t.Fatalf("read %q", cli.buf[2000:2020])
			}
			// Deregistering with a window bound is refused.
			var dov ndabi.Overlapped
			want(t, "Deregister", srv.mr.Deregister(&dov), nd.Pending)
			finish(t, "Deregister with a window bound", &srv.mr.Base, &dov, nd.ErrDeviceBusy)
			packet(t, srv.file, &dov, nd.ErrDeviceBusy)
			want(t, "Invalidate", srv.qp.Invalidate(0x3002, mw, 0), nd.Success)
			srv.expect(t, 0x3002, ndabi.RequestInvalidate, nd.Success, 0)
			want(t, "Write through the invalidated window", cli.qp.Write(0x2006, &w, 1, base4096, token, 0), nd.Success)
			cli.expect(t, 0x2006, ndabi.RequestWrite, nd.ErrAccessViolation, 0)

			// The connection ended: the passive side learns it.
			var nov ndabi.Overlapped
			want(t, "NotifyDisconnect", srv.conn.NotifyDisconnect(&nov), nd.Pending)
			finish(t, "NotifyDisconnect", &srv.conn.Base, &nov, nd.Success)
			packet(t, srv.file, &nov, nd.Success)
			var xov ndabi.Overlapped
			want(t, "Disconnect", srv.conn.Disconnect(&xov), nd.Pending)
			st = srv.conn.GetOverlappedResult(&xov, true)
			packet(t, srv.file, &xov, st)

			mw.Release()
			ls.Release()
			for _, s := range []*v2Side{srv, cli} {
				s.ad.Release()
				s.cq.Release()
				s.conn.Release()
				s.mr.Release()
				s.qp.Release()
			}
			waitLive(t, base)
		})
	}
}

// TestV2ConnectorOutlivesQueuePair releases the active side's queue pair
// with the connection up: the connector that carried it still answers for
// it (read limits, private data) rather than ND_INVALID_HANDLE, and both
// sides learn that it ended.
func TestV2ConnectorOutlivesQueuePair(t *testing.T) {
	for _, tr := range transports(t) {
		t.Run(tr.Name, func(t *testing.T) {
			base := Live()
			srv, cli := openV2(t, tr), openV2(t, tr)
			ls := connectV2(t, srv, cli)
			cli.qp.Release()
			var ird, ord uint32
			want(t, "GetReadLimits after the queue pair's release", cli.conn.GetReadLimits(&ird, &ord), nd.Success)
			if ird != 2 || ord != 2 {
				t.Fatalf("read limits %d %d, want 2 2", ird, ord)
			}
			n := uint32(0)
			want(t, "GetPrivateData after the queue pair's release", cli.conn.GetPrivateData(nil, &n), nd.Success)
			for _, s := range []*v2Side{cli, srv} {
				var nov ndabi.Overlapped
				want(t, "NotifyDisconnect", s.conn.NotifyDisconnect(&nov), nd.Pending)
				finish(t, "NotifyDisconnect", &s.conn.Base, &nov, nd.Success)
				packet(t, s.file, &nov, nd.Success)
			}
			ls.Release()
			srv.qp.Release()
			for _, s := range []*v2Side{srv, cli} {
				s.conn.Release()
				s.mr.Release()
				s.cq.Release()
				s.ad.Release()
			}
			waitLive(t, base)
		})
	}
}

// TestV2ListenBacklog: IND2Listener::Listen(1) refuses a second request
// while the first waits for GetConnectionRequest.
func TestV2ListenBacklog(t *testing.T) {
	for _, tr := range transports(t) {
		t.Run(tr.Name, func(t *testing.T) {
			base := Live()
			srv, c1, c2 := openV2(t, tr), openV2(t, tr), openV2(t, tr)
			ls, st := srv.ad.CreateListener(ndabi.IIDIND2Listener, srv.fh)
			want(t, "CreateListener", st, nd.Success)
			any := sockaddr(netip.AddrPortFrom(netip.IPv4Unspecified(), 0))
			want(t, "listener Bind", ls.Bind(ptr(any), uintptr(len(any))), nd.Success)
			want(t, "Listen(1)", ls.Listen(1), nd.Success)
			var la [16]byte
			n := uint32(len(la))
			want(t, "listener GetLocalAddress", ls.GetLocalAddress(unsafe.Pointer(&la), &n), nd.Success)
			dest := la[:n]
			// Two requests: whichever arrives second is refused, the
			// other waits in the backlog until the listener goes.
			var ovs [2]ndabi.Overlapped
			cs := []*v2Side{c1, c2}
			done := make(chan int, 2)
			for i, c := range cs {
				want(t, "Connect", c.conn.Connect(c.qp, ptr(dest), uintptr(len(dest)), 0, 0, nil, 0, &ovs[i]), nd.Pending)
				go func() {
					c.conn.GetOverlappedResult(&ovs[i], true)
					done <- i
				}()
			}
			var refused int
			select {
			case refused = <-done:
			case <-time.After(10 * time.Second):
				t.Fatal("neither Connect was refused within 10 s: a backlog of 1 must refuse one of two requests")
			}
			waiting := 1 - refused
			finish(t, "the Connect beyond the backlog", &cs[refused].conn.Base, &ovs[refused], nd.ErrConnectionRefused)
			packet(t, cs[refused].file, &ovs[refused], nd.ErrConnectionRefused)
			if st := cs[waiting].conn.GetOverlappedResult(&ovs[waiting], false); st != nd.Pending {
				t.Fatalf("the Connect in the backlog = %v; want it pending", st)
			}
			ls.Release()
			<-done
			finish(t, "the waiting Connect after the listener's release", &cs[waiting].conn.Base, &ovs[waiting], nd.ErrConnectionRefused)
			packet(t, cs[waiting].file, &ovs[waiting], nd.ErrConnectionRefused)
			for _, s := range []*v2Side{srv, c1, c2} {
				s.conn.Release()
				s.qp.Release()
				s.mr.Release()
				s.cq.Release()
				s.ad.Release()
			}
			waitLive(t, base)
		})
	}
}
