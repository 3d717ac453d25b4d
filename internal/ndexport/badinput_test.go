package ndexport

import (
	"math"
	"net/netip"
	"testing"
	"unsafe"

	"github.com/godirect/nd"
	"github.com/godirect/nd/internal/ndabi"
)

// TestBadInputV1: every argument a consumer can get wrong answers its ND
// status, by parameter position, and touches nothing.
func TestBadInputV1(t *testing.T) {
	tr := transports(t)[0]
	p := NewProvider1(tr)
	defer p.Release()
	_, st := p.OpenAdapter(nil, 16)
	want(t, "OpenAdapter(NULL)", st, nd.ErrInvalidAddress)
	bad := sockaddr(netip.AddrPortFrom(localhost, 0))
	bad[0] = 99
	_, st = p.OpenAdapter(ptr(bad), 16)
	want(t, "OpenAdapter of an unknown family", st, nd.ErrInvalidAddress)
	want(t, "QueryAddressList without a size", p.QueryAddressList(nil, nil), nd.ErrInvalidParameter2)

	srv, cli := openV1(t, tr), openV1(t, tr)
	ad := srv.ad
	want(t, "Query without a size", ad.Query(1, nil, nil), nd.ErrInvalidParameter3)
	var ov ndabi.Overlapped
	buf := make([]byte, 64)
	_, st = ad.RegisterMemory(nil, 64, &ov)
	want(t, "RegisterMemory(NULL)", st, nd.ErrInvalidParameter)
	_, st = ad.RegisterMemory(ptr(buf), 0, &ov)
	want(t, "RegisterMemory of 0 bytes", st, nd.ErrInvalidBufferSize)
	_, st = ad.RegisterMemory(ptr(buf), math.MaxInt64, &ov)
	want(t, "RegisterMemory beyond the maximum", st, nd.ErrInvalidParameter)
	_, st = ad.RegisterMemory(ptr(buf), 64, nil)
	want(t, "RegisterMemory without OVERLAPPED", st, nd.ErrInvalidParameter3)
	want(t, "DeregisterMemory of a forged handle", ad.DeregisterMemory(0xdead0001, &ov), nd.ErrInvalidParameter1)
	want(t, "DeregisterMemory without OVERLAPPED", ad.DeregisterMemory(srv.mr, nil), nd.ErrInvalidParameter2)
	_, st = ad.Listen(0, 300, 0, new(uint16))
	want(t, "Listen with protocol 300", st, nd.ErrInvalidParameter2)

	_, st = srv.conn.CreateEndpoint(nil, srv.cq, 1, 1, 1, 1, 0, 0, nil)
	want(t, "CreateEndpoint without inbound queue", st, nd.ErrInvalidParameter1)
	_, st = srv.conn.CreateEndpoint(srv.cq, cli.cq, 1, 1, 1, 1, 0, 0, nil)
	want(t, "CreateEndpoint with another adapter's queue", st, nd.ErrInvalidParameter2)
	_, st = srv.conn.CreateEndpoint(srv.cq, srv.cq, math.MaxUint64, 1, 1, 1, 0, 0, nil)
	want(t, "CreateEndpoint with a huge depth", st, nd.ErrInvalidParameter3)

	remote := sockaddr(netip.AddrPortFrom(localhost, 1))
	want(t, "Connect with another connector's endpoint", cli.conn.Connect(srv.ep, ptr(remote), 16, 6, 0, nil, 0, &ov), nd.ErrInvalidParameter1)
	want(t, "Connect to a short sockaddr", cli.conn.Connect(cli.ep, ptr(remote), 8, 6, 0, nil, 0, &ov), nd.ErrInvalidAddress)
	big := make([]byte, 4096)
	want(t, "Connect with too much private data", cli.conn.Connect(cli.ep, ptr(remote), 16, 6, 0, ptr(big), 4096, &ov), nd.ErrInvalidBufferSize)
	want(t, "Connect with private data at NULL", cli.conn.Connect(cli.ep, ptr(remote), 16, 6, 0, nil, 10, &ov), nd.ErrAccessViolation)
	want(t, "Connect without OVERLAPPED", cli.conn.Connect(cli.ep, ptr(remote), 16, 6, 0, nil, 0, nil), nd.ErrInvalidParameter8)
	var n uintptr
	want(t, "GetLocalAddress unconnected", cli.conn.GetLocalAddress(nil, &n), nd.ErrConnectionInvalid)

	// Posting: entries beyond the limit, at NULL, or that cannot be
	// memory are refused at once; a forged memory handle completes with
	// ND_ACCESS_VIOLATION (the Receive needs no connection).
	var res nd.Result
	sges := make([]ndabi.SGE, 5)
	want(t, "Receive with 5 entries of 4", srv.ep.Receive(&res, &sges[0], 5), nd.ErrDataOverrun)
	want(t, "Receive with entries at NULL", srv.ep.Receive(&res, nil, 1), nd.ErrInvalidParameter2)
	sges[0] = ndabi.SGE{Addr: nil, Length: 10, MR: srv.mr}
	want(t, "Receive into NULL", srv.ep.Receive(&res, &sges[0], 1), nd.ErrAccessViolation)
	sges[0] = ndabi.SGE{Addr: unsafe.Pointer(&buf[0]), Length: math.MaxUint32, MR: srv.mr}
	want(t, "Receive longer than the adapter's maximum", srv.ep.Receive(&res, &sges[0], 1), nd.ErrBufferOverflow)
	want(t, "Send unconnected", cli.ep.Send(&res, nil, 0, 0), nd.ErrConnectionInvalid)
	var desc [20]byte
	want(t, "Bind without a window", srv.ep.Bind(&res, srv.mr, nil, ptr(buf), 8, uint32(nd.FlagAllowRead), &desc), nd.ErrInvalidParameter3)
	mw, _ := ad.CreateMemoryWindow(nil)
	defer mw.Release()
	want(t, "Bind without a descriptor", srv.ep.Bind(&res, srv.mr, mw, ptr(buf), 8, uint32(nd.FlagAllowRead), nil), nd.ErrInvalidParameter7)
	want(t, "Read without a descriptor", cli.ep.Read(&res, nil, 0, nil, 0, 0), nd.ErrInvalidParameter4)
	want(t, "Write without a descriptor", cli.ep.Write(&res, nil, 0, nil, 0, 0), nd.ErrInvalidParameter4)

	ls := connectV1(t, srv, cli)
	defer ls.Release()
	var forged, s nd.Result
	fsge := ndabi.SGE{Addr: unsafe.Pointer(&srv.buf[0]), Length: 8, MR: 0x7777}
	want(t, "Receive with a forged handle", srv.ep.Receive(&forged, &fsge, 1), nd.Success)
	sg := cli.sge(0, 8)
	want(t, "Send", cli.ep.Send(&s, &sg, 1, 0), nd.Success)
	srv.expect(t, &forged, nd.ErrAccessViolation, 0)
}

// TestBadInputV2: the same for ND v2's objects.
func TestBadInputV2(t *testing.T) {
	tr := transports(t)[0]
	s := openV2(t, tr)
	ad := s.ad
	_, st := ad.CreateCompletionQueue(ndabi.IIDINDCompletionQueue, s.fh, 4)
	want(t, "CreateCompletionQueue for a v1 interface", st, nd.Status(ndabi.E_NOINTERFACE))
	_, st = ad.CreateConnector(ndabi.IIDIND2Listener, s.fh)
	want(t, "CreateConnector for a listener", st, nd.Status(ndabi.E_NOINTERFACE))
	want(t, "CreateOverlappedFile(NULL)", ad.CreateOverlappedFile(nil), nd.ErrInvalidParameter1)
	want(t, "Query without a size", ad.Query(nil, nil), nd.ErrInvalidParameter2)

	mr, _ := ad.CreateMemoryRegion(ndabi.IIDIND2MemoryRegion, s.fh)
	defer mr.Release()
	var ov ndabi.Overlapped
	want(t, "Deregister unregistered", mr.Deregister(&ov), nd.ErrInvalidDeviceState)
	want(t, "Register with an unknown flag", mr.Register(ptr(s.buf), 64, 0x40, &ov), nd.ErrInvalidParameter3)
	want(t, "Register twice", s.mr.Register(ptr(s.buf), 64, 0, &ov), nd.ErrInvalidDeviceState)
	want(t, "Register without OVERLAPPED", mr.Register(ptr(s.buf), 64, 0, nil), nd.ErrInvalidParameter4)
	// Read-only registration: no window with write access.
	want(t, "Register", mr.Register(ptr(s.buf), 64, ndabi.MRFlagAllowRemoteRead, &ov), nd.Pending)
	finish(t, "Register", &mr.Base, &ov, nd.Success)
	packet(t, s.file, &ov, nd.Success)
	mw, _ := ad.CreateMemoryWindow(ndabi.IIDIND2MemoryWindow)
	defer mw.Release()
	want(t, "Bind without a region", s.qp.Bind(0, nil, mw, ptr(s.buf), 8, uint32(nd.FlagAllowRead)), nd.ErrInvalidParameter2)
	want(t, "Bind with an unknown flag", s.qp.Bind(0, mr, mw, ptr(s.buf), 8, 0x20), nd.ErrInvalidParameter6)
	want(t, "Bind for writes without local write", s.qp.Bind(0, mr, mw, ptr(s.buf), 8, uint32(nd.FlagAllowWrite)), nd.ErrAccessViolation)
	unreg, _ := ad.CreateMemoryRegion(ndabi.IIDIND2MemoryRegion, s.fh)
	defer unreg.Release()
	want(t, "Bind in a region not registered", s.qp.Bind(0, unreg, mw, ptr(s.buf), 8, uint32(nd.FlagAllowRead)), nd.ErrInvalidParameter2)
	want(t, "Read with an unknown flag", s.qp.Read(0, nil, 0, 0, 0, ndabi.OpFlagInline), nd.ErrInvalidParameter6)
	want(t, "Invalidate without a window", s.qp.Invalidate(0, nil, 0), nd.ErrInvalidParameter2)
	want(t, "GetPrivateData without a size", s.conn.GetPrivateData(nil, nil), nd.ErrInvalidParameter2)
	want(t, "Connect without a queue pair", s.conn.Connect(nil, nil, 0, 0, 0, nil, 0, &ov), nd.ErrInvalidParameter1)
	foreign := sockaddr(netip.MustParseAddrPort("192.0.2.9:5"))
	want(t, "Bind to a foreign address", s.conn.Bind(ptr(foreign), uintptr(len(foreign))), nd.ErrInvalidAddress)
	want(t, "Accept without a request", s.conn.Accept(s.qp, 0, 0, nil, 0, &ov), nd.ErrConnectionInvalid)
	var g uint16
	var aff uintptr
	want(t, "GetNotifyAffinity", GetNotifyAffinity(&g, &aff), nd.Success)
	if aff == 0 {
		t.Fatal("empty affinity")
	}
	want(t, "GetNotifyAffinity(NULL)", GetNotifyAffinity(nil, &aff), nd.ErrInvalidParameter1)
	// A forged token: the Receive completes ND_ACCESS_VIOLATION when used.
	f := ndabi.SGE2{Buffer: ptr(s.buf), BufferLength: 8, MemoryRegionToken: 0xfffff}
	want(t, "Receive with a forged token", s.qp.Receive(1, &f, 1), nd.Success)
	want(t, "Flush", s.qp.Flush(), nd.Success)
	r := s.reap(t)
	if r.Status != uint32(nd.ErrCanceled) || r.RequestContext != 1 {
		t.Fatalf("flushed Receive %+v", r)
	}
}

// TestReleaseWithPendingRequests: releasing objects whose requests are
// pending completes those requests (ND_CANCELED, with their packets) and
// the objects go.
func TestReleaseWithPendingRequests(t *testing.T) {
	base := Live()
	ad, h, f := loopAdapter2(t)
	cq, _ := ad.CreateCompletionQueue(ndabi.IIDIND2CompletionQueue, h, 4)
	ls, _ := ad.CreateListener(ndabi.IIDIND2Listener, h)
	conn, _ := ad.CreateConnector(ndabi.IIDIND2Connector, h)
	any := sockaddr(netip.AddrPortFrom(netip.IPv4Unspecified(), 0))
	want(t, "Bind", ls.Bind(ptr(any), uintptr(len(any))), nd.Success)
	want(t, "Listen", ls.Listen(0), nd.Success)
	var nov, lov ndabi.Overlapped
	want(t, "Notify", cq.Notify(uint32(nd.NotifyAny), &nov), nd.Pending)
	want(t, "GetConnectionRequest", ls.GetConnectionRequest(conn, &lov), nd.Pending)
	ad.AddRef()
	ad.Release()
	cq.Release()
	ls.Release()
	conn.Release()
	packets := map[*ndabi.Overlapped]uintptr{}
	for range 2 {
		p, ok := f.(*MemoryFile).Dequeue(true)
		if !ok {
			t.Fatal("no packet")
		}
		packets[p.Overlapped] = p.Status
	}
	if packets[&nov] != statusCancelled || packets[&lov] != statusCancelled {
		t.Fatalf("packets %v", packets)
	}
	ad.Release()
	waitLive(t, base)
}

// TestDataPathAllocatesNothing: posting and reaping through the objects, v1
// and v2, allocates nothing.
func TestDataPathAllocatesNothing(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates on its own")
	}
	tr := transports(t)[0]
	srv, cli := openV1(t, tr), openV1(t, tr)
	connectV1(t, srv, cli)
	var sres, rres nd.Result
	rs := srv.sge(0, 64)
	ss := cli.sge(0, 64)
	var out [4]*nd.Result
	v1 := testing.AllocsPerRun(200, func() {
		srv.ep.Receive(&rres, &rs, 1)
		cli.ep.Send(&sres, &ss, 1, 0)
		for cli.cq.GetResults(out[:1]) == 0 {
		}
		for srv.cq.GetResults(out[:1]) == 0 {
		}
	})
	s2, c2 := openV2(t, tr), openV2(t, tr)
	connectV2(t, s2, c2)
	rs2 := s2.sge(0, 64)
	ss2 := c2.sge(0, 64)
	var out2 [4]ndabi.Result2
	v2 := testing.AllocsPerRun(200, func() {
		s2.qp.Receive(1, &rs2, 1)
		c2.qp.Send(2, &ss2, 1, 0)
		for c2.cq.GetResults(out2[:1]) == 0 {
		}
		for s2.cq.GetResults(out2[:1]) == 0 {
		}
	})
	if v1 != 0 || v2 != 0 {
		t.Fatalf("allocations per round trip: v1 %v, v2 %v", v1, v2)
	}
}
