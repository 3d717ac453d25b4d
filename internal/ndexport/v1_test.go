package ndexport

import (
	"bytes"
	"net/netip"
	"testing"
	"unsafe"

	"github.com/godirect/nd"
	"github.com/godirect/nd/internal/ndabi"
)

// v1Side is one side of an ND v1 connection driven through the objects as a
// consumer drives the COM interfaces.
type v1Side struct {
	ad   *Adapter1
	cq   *CQ1
	conn *Connector1
	ep   *Endpoint1
	buf  []byte
	mr   uintptr
}

func openV1(t *testing.T, tr *Transport) *v1Side {
	t.Helper()
	p := NewProvider1(tr)
	defer p.Release() // the adapter outlives the provider
	// QueryAddressList: a size probe, then the list.
	var n uintptr
	want(t, "QueryAddressList probe", p.QueryAddressList(nil, &n), nd.ErrBufferOverflow)
	list := make([]byte, n)
	want(t, "QueryAddressList", p.QueryAddressList(ptr(list), &n), nd.Success)
	addrs, ok := ndabi.ParseAddressList(list, uintptr(ptr(list)))
	if !ok || len(addrs) == 0 {
		t.Fatalf("address list %v %v", addrs, ok)
	}
	sa := sockaddr(netip.AddrPortFrom(addrs[0], 0))
	if _, st := p.OpenAdapter(ptr(sa), 10); st != nd.ErrInvalidAddress {
		t.Fatalf("OpenAdapter with a short sockaddr = %v", st)
	}
	ad, st := p.OpenAdapter(ptr(sa), uintptr(len(sa)))
	want(t, "OpenAdapter", st, nd.Success)
	s := &v1Side{ad: ad, buf: make([]byte, 4096)}
	var info ndabi.AdapterInfo1
	n = 8
	want(t, "Query small", ad.Query(1, unsafe.Pointer(&info), &n), nd.ErrBufferOverflow)
	if n != 128 || info.MaxCqEntries != 0 {
		t.Fatalf("Query probe wrote %d / touched the buffer", n)
	}
	want(t, "Query v2", ad.Query(2, unsafe.Pointer(&info), &n), nd.ErrNotSupported)
	want(t, "Query", ad.Query(1, unsafe.Pointer(&info), &n), nd.Success)
	if info.MaxCqEntries == 0 || info.MaxCallerData == 0 {
		t.Fatalf("Query = %+v", info)
	}
	if s.cq, st = ad.CreateCompletionQueue(64); st != nd.Success {
		t.Fatal(st)
	}
	var ov ndabi.Overlapped
	s.mr, st = ad.RegisterMemory(ptr(s.buf), uintptr(len(s.buf)), &ov)
	want(t, "RegisterMemory", st, nd.Pending)
	packet(t, ad.file, &ov, nd.Success)
	finish(t, "RegisterMemory", &ad.Base, &ov, nd.Success)
	if s.conn, st = ad.CreateConnector(); st != nd.Success {
		t.Fatal(st)
	}
	var inline uintptr
	if s.ep, st = s.conn.CreateEndpoint(s.cq, s.cq, 8, 8, 4, 4, 2, 2, &inline); st != nd.Success {
		t.Fatal(st)
	}
	if inline == 0 {
		t.Fatal("no inline data granted")
	}
	return s
}

// sge is one registered entry of s's buffer.
func (s *v1Side) sge(off, n int) ndabi.SGE {
	return ndabi.SGE{Addr: unsafe.Pointer(&s.buf[off]), Length: uintptr(n), MR: s.mr}
}

// reap takes one completion from s's queue, waiting with Notify through the
// adapter's file when there is none.
func (s *v1Side) reap(t *testing.T) *nd.Result {
	t.Helper()
	var out [1]*nd.Result
	for s.cq.GetResults(out[:]) == 0 {
		var ov ndabi.Overlapped
		want(t, "Notify", s.cq.Notify(uint32(nd.NotifyAny), &ov), nd.Pending)
		if s.cq.GetResults(out[:]) == 1 {
			// Found meanwhile: the Notify is canceled, unless it fired
			// first.
			want(t, "CancelOverlappedRequests", s.cq.CancelOverlappedRequests(), nd.Success)
			st := s.cq.GetOverlappedResult(&ov, false)
			if st != nd.ErrCanceled && st != nd.Success {
				t.Fatalf("canceled Notify = %v", st)
			}
			packet(t, s.ad.file, &ov, st)
			break
		}
		st := s.cq.GetOverlappedResult(&ov, true)
		packet(t, s.ad.file, &ov, st)
		want(t, "Notify's completion", st, nd.Success)
	}
	return out[0]
}

func (s *v1Side) expect(t *testing.T, res *nd.Result, st nd.Status, n int) {
	t.Helper()
	got := s.reap(t)
	if got != res || got.Status != st || got.BytesTransferred != n {
		t.Fatalf("completion %p %v %d, want %p %v %d", got, got.Status, got.BytesTransferred, res, st, n)
	}
}

// connectV1 connects cli to srv with private data both ways, as ND v1's
// handshake goes: Listen, GetConnectionRequest, Connect, GetConnectionData,
// Accept, CompleteConnect.
func connectV1(t *testing.T, srv, cli *v1Side) *Listen1 {
	t.Helper()
	var port uint16
	_, st := srv.ad.Listen(0, 6, 0, nil)
	want(t, "Listen without pAssignedPort", st, nd.ErrInvalidParameterMix)
	ls, st := srv.ad.Listen(0, 6, 0, &port)
	want(t, "Listen", st, nd.Success)
	// The passive side's connector is its own (srv.conn gets the request).
	var lov, cov, aov, ccov ndabi.Overlapped
	want(t, "GetConnectionRequest", ls.GetConnectionRequest(srv.conn, &lov), nd.Pending)
	// A Receive posted before the connection.
	var pre nd.Result
	sg := srv.sge(0, 64)
	want(t, "Receive", srv.ep.Receive(&pre, &sg, 1), nd.Success)
	remote := sockaddr(netip.AddrPortFrom(srv.ad.a.Address(), ntohs(port)))
	hello := []byte("caller private data")
	want(t, "Connect", cli.conn.Connect(cli.ep, ptr(remote), uintptr(len(remote)), 6, 0, ptr(hello), uintptr(len(hello)), &cov), nd.Pending)
	finish(t, "GetConnectionRequest", &ls.Base, &lov, nd.Success)
	packet(t, srv.ad.file, &lov, nd.Success)
	var ird, ord, n uintptr
	want(t, "GetConnectionData probe", srv.conn.GetConnectionData(&ird, &ord, nil, &n), nd.ErrBufferOverflow)
	if n != uintptr(len(hello)) || ird != 2 || ord != 2 {
		t.Fatalf("GetConnectionData: %d bytes, limits %d %d", n, ird, ord)
	}
	pd := make([]byte, n)
	want(t, "GetConnectionData", srv.conn.GetConnectionData(nil, nil, ptr(pd), &n), nd.Success)
	if !bytes.Equal(pd, hello) {
		t.Fatalf("private data %q", pd)
	}
	var peer [28]byte
	n = uintptr(len(peer))
	want(t, "GetPeerAddress before Accept", srv.conn.GetPeerAddress(unsafe.Pointer(&peer), &n), nd.Success)
	reply := []byte("callee")
	want(t, "Accept", srv.conn.Accept(srv.ep, ptr(reply), uintptr(len(reply)), &aov), nd.Pending)
	finish(t, "Connect", &cli.conn.Base, &cov, nd.Success)
	packet(t, cli.ad.file, &cov, nd.Success)
	n = 3
	small := make([]byte, 3)
	want(t, "GetConnectionData partial", cli.conn.GetConnectionData(nil, nil, ptr(small), &n), nd.ErrBufferOverflow)
	if n != 6 || string(small) != "cal" {
		t.Fatalf("partial private data %q, length %d", small, n)
	}
	want(t, "CompleteConnect", cli.conn.CompleteConnect(&ccov), nd.Pending)
	finish(t, "CompleteConnect", &cli.conn.Base, &ccov, nd.Success)
	packet(t, cli.ad.file, &ccov, nd.Success)
	finish(t, "Accept", &srv.conn.Base, &aov, nd.Success)
	packet(t, srv.ad.file, &aov, nd.Success)
	// The first Send (active side first) lands in the Receive posted before.
	var send nd.Result
	copy(cli.buf, "first")
	sg = cli.sge(0, 5)
	want(t, "Send", cli.ep.Send(&send, &sg, 1, 0), nd.Success)
	cli.expect(t, &send, nd.Success, 5)
	srv.expect(t, &pre, nd.Success, 5)
	if string(srv.buf[:5]) != "first" {
		t.Fatalf("received %q", srv.buf[:5])
	}
	return ls
}

// TestV1 drives a whole ND v1 session over each transport: the handshake
// with private data, Sends (zero bytes, several entries, inline), a window
// bound and read and written through, SendAndInvalidate, the peer's
// disconnect, and the objects released parent first.
func TestV1(t *testing.T) {
	for _, tr := range transports(t) {
		t.Run(tr.Name, func(t *testing.T) {
			base := Live()
			srv, cli := openV1(t, tr), openV1(t, tr)
			ls := connectV1(t, srv, cli)

			// Zero bytes, and three entries into two.
			var r0, s0, r1, s1 nd.Result
			sg := srv.sge(100, 0)
			want(t, "Receive 0", srv.ep.Receive(&r0, &sg, 1), nd.Success)
			two := [2]ndabi.SGE{srv.sge(200, 4), srv.sge(300, 60)}
			want(t, "Receive 2", srv.ep.Receive(&r1, &two[0], 2), nd.Success)
			want(t, "Send 0", cli.ep.Send(&s0, nil, 0, 0), nd.Success)
			copy(cli.buf[10:], "abcdefghij")
			three := [3]ndabi.SGE{cli.sge(10, 3), {Addr: unsafe.Pointer(&cli.buf[13]), Length: 4}, cli.sge(17, 3)}
			want(t, "Send 3 (one inline)", cli.ep.Send(&s1, &three[0], 3, 0), nd.Success)
			cli.expect(t, &s0, nd.Success, 0)
			cli.expect(t, &s1, nd.Success, 10)
			srv.expect(t, &r0, nd.Success, 0)
			srv.expect(t, &r1, nd.Success, 10)
			if string(srv.buf[200:204])+string(srv.buf[300:306]) != "abcdefghij" {
				t.Fatalf("scattered %q %q", srv.buf[200:204], srv.buf[300:306])
			}

			// A window on the server, its descriptor to the client, a
			// Write and a Read through it.
			var invalidated nd.Result
			mw, st := srv.ad.CreateMemoryWindow(&invalidated)
			want(t, "CreateMemoryWindow", st, nd.Success)
			var bind nd.Result
			var desc [ndabi.MWDescriptorSize]byte
			want(t, "Bind", srv.ep.Bind(&bind, srv.mr, mw, unsafe.Pointer(&srv.buf[1024]), 1024, uint32(nd.FlagAllowRead|nd.FlagAllowWrite), &desc), nd.Success)
			srv.expect(t, &bind, nd.Success, 0)
			var w, rd nd.Result
			copy(cli.buf[2048:], "written through the window")
			sg = cli.sge(2048, 26)
			want(t, "Write", cli.ep.Write(&w, &sg, 1, &desc, 100, 0), nd.Success)
			cli.expect(t, &w, nd.Success, 26)
			if got := string(srv.buf[1124:1150]); got != "written through the window" {
				t.Fatalf("window holds %q", got)
			}
			sg = cli.sge(3000, 26)
			want(t, "Read", cli.ep.Read(&rd, &sg, 1, &desc, 100, 0), nd.Success)
			cli.expect(t, &rd, nd.Success, 26)
			if got := string(cli.buf[3000:3026]); got != "written through the window" {
				t.Fatalf("read %q", got)
			}
			// Out of the window's range: access violation, and the
			// connection ends.
			var bad nd.Result
			sg = cli.sge(0, 64)
			want(t, "Write past the window", cli.ep.Write(&bad, &sg, 1, &desc, 1000, 0), nd.Success)
			cli.expect(t, &bad, nd.ErrAccessViolation, 0) // a failed request moved nothing
			var nov ndabi.Overlapped
			want(t, "NotifyDisconnect", srv.conn.NotifyDisconnect(&nov), nd.Pending)
			finish(t, "NotifyDisconnect", &srv.conn.Base, &nov, nd.Success)
			packet(t, srv.ad.file, &nov, nd.Success)
			var dov ndabi.Overlapped
			want(t, "Disconnect", cli.conn.Disconnect(&dov), nd.Pending)
			st = cli.conn.GetOverlappedResult(&dov, true)
			packet(t, cli.ad.file, &dov, st)

			// Release parents first: everything stays usable until its
			// own last reference goes, then the whole tree goes.
			for _, s := range []*v1Side{srv, cli} {
				s.ad.Release()
				s.conn.Release()
				s.cq.Release()
				s.ep.Release()
			}
			mw.Release()
			ls.Release()
			waitLive(t, base)
			if ls.AddRef() != 0 || ls.Release() != 0 {
				t.Fatal("a released object took a reference")
			}
		})
	}
}
