package ndexport

import (
	"net/netip"
	"testing"
	"unsafe"

	"github.com/godirect/nd"
	"github.com/godirect/nd/internal/ndabi"
)

// TestRefusedConnect: a Connect nobody listens for, and one the passive
// side rejects, complete with a failure-class packet and the exact status
// from GetOverlappedResult; the connector may connect again.
func TestRefusedConnect(t *testing.T) {
	for _, tr := range transports(t) {
		t.Run(tr.Name, func(t *testing.T) {
			srv, cli := openV2(t, tr), openV2(t, tr)
			defer func() {
				srv.release()
				cli.release()
			}()
			ls, _ := srv.ad.CreateListener(ndabi.IIDIND2Listener, srv.fh)
			defer ls.Release()
			any := sockaddr(netip.AddrPortFrom(netip.IPv4Unspecified(), 0))
			want(t, "Bind", ls.Bind(ptr(any), uintptr(len(any))), nd.Success)
			var la [16]byte
			n := uint32(16)
			want(t, "GetLocalAddress before Listen", ls.GetLocalAddress(unsafe.Pointer(&la), &n), nd.ErrInvalidDeviceState)
			want(t, "Listen", ls.Listen(4), nd.Success)
			want(t, "GetLocalAddress", ls.GetLocalAddress(unsafe.Pointer(&la), &n), nd.Success)
			lap, _ := ndabi.ParseSockaddr(la[:n])

			// Nobody on port lap+1.
			dead := sockaddr(netip.AddrPortFrom(lap.Addr(), lap.Port()+1))
			var ov ndabi.Overlapped
			want(t, "Connect", cli.conn.Connect(cli.qp, ptr(dead), uintptr(len(dead)), 0, 0, nil, 0, &ov), nd.Pending)
			finish(t, "Connect to a closed port", &cli.conn.Base, &ov, nd.ErrConnectionRefused)
			packet(t, cli.file, &ov, nd.ErrConnectionRefused)

			// Rejected, with private data; then the same connector connects
			// again and is accepted.
			var lov ndabi.Overlapped
			want(t, "GetConnectionRequest", ls.GetConnectionRequest(srv.conn, &lov), nd.Pending)
			dest := sockaddr(lap)
			want(t, "Connect", cli.conn.Connect(cli.qp, ptr(dest), uintptr(len(dest)), 0, 0, nil, 0, &ov), nd.Pending)
			finish(t, "GetConnectionRequest", &ls.Base, &lov, nd.Success)
			packet(t, srv.file, &lov, nd.Success)
			no := []byte("no")
			want(t, "Reject", srv.conn.Reject(ptr(no), 2), nd.Success)
			finish(t, "Connect rejected", &cli.conn.Base, &ov, nd.ErrConnectionRefused)
			packet(t, cli.file, &ov, nd.ErrConnectionRefused)
			pd := make([]byte, 8)
			n = uint32(len(pd))
			want(t, "GetPrivateData after the refusal", cli.conn.GetPrivateData(ptr(pd), &n), nd.Success)
			if string(pd[:n]) != "no" {
				t.Fatalf("the reject's private data: %q", pd[:n])
			}

			conn2, _ := srv.ad.CreateConnector(ndabi.IIDIND2Connector, srv.fh)
			defer conn2.Release()
			want(t, "GetConnectionRequest", ls.GetConnectionRequest(conn2, &lov), nd.Pending)
			want(t, "Connect again", cli.conn.Connect(cli.qp, ptr(dest), uintptr(len(dest)), 0, 0, nil, 0, &ov), nd.Pending)
			finish(t, "GetConnectionRequest", &ls.Base, &lov, nd.Success)
			packet(t, srv.file, &lov, nd.Success)
			var aov ndabi.Overlapped
			want(t, "Accept", conn2.Accept(srv.qp, 0, 0, nil, 0, &aov), nd.Pending)
			finish(t, "Connect", &cli.conn.Base, &ov, nd.Success)
			packet(t, cli.file, &ov, nd.Success)
			want(t, "CompleteConnect", cli.conn.CompleteConnect(&ov), nd.Pending)
			finish(t, "CompleteConnect", &cli.conn.Base, &ov, nd.Success)
			packet(t, cli.file, &ov, nd.Success)
			finish(t, "Accept", &conn2.Base, &aov, nd.Success)
			packet(t, srv.file, &aov, nd.Success)
		})
	}
}

// TestTimeoutV1: ND v1 consumers get the success-class ND_TIMEOUT for a
// connection attempt that timed out, ND v2's ND_IO_TIMEOUT otherwise.
func TestTimeoutV1(t *testing.T) {
	if timeoutV1(nd.ErrIOTimeout) != nd.Timeout || timeoutV1(nd.ErrConnectionRefused) != nd.ErrConnectionRefused {
		t.Fatal("timeoutV1")
	}
	if !succeeded(nd.Timeout) || succeeded(nd.ErrIOTimeout) || !succeeded(nd.Success) || succeeded(nd.ErrBufferOverflow) {
		t.Fatal("succeeded")
	}
}

// TestSharedReceiveQueue: two queue pairs on one shared receive queue; each
// Receive completes on the receiving queue pair's queue with its context;
// the queue's Notify fires below the threshold; Modify grows it.
func TestSharedReceiveQueue(t *testing.T) {
	tr := transports(t)[0]
	srv := openV2(t, tr)
	_, st := srv.ad.CreateSharedReceiveQueue(ndabi.IIDIND2SharedReceiveQueue, srv.fh, 0, 1, 0)
	want(t, "SRQ of depth 0", st, nd.ErrInvalidParameter3)
	_, st = srv.ad.CreateSharedReceiveQueue(ndabi.IIDIND2SharedReceiveQueue, srv.fh, 4, 1, 5)
	want(t, "SRQ threshold beyond depth", st, nd.ErrInvalidParameter5)
	srq, st := srv.ad.CreateSharedReceiveQueue(ndabi.IIDIND2SharedReceiveQueue, srv.fh, 4, 1, 2)
	want(t, "CreateSharedReceiveQueue", st, nd.Success)
	var qps [2]*QueuePair2
	for i := range qps {
		qps[i], st = srv.ad.CreateQueuePairWithSrq(ndabi.IIDIND2QueuePair, srv.cq, srv.cq, srq, uintptr(0xA0+i), 4, 1, 0)
		want(t, "CreateQueuePairWithSrq", st, nd.Success)
		want(t, "Receive on a queue pair with a shared queue", qps[i].Receive(0, nil, 0), nd.ErrInvalidDeviceRequest)
	}
	if _, st := srv.ad.CreateQueuePairWithSrq(ndabi.IIDIND2QueuePair, srv.cq, srv.cq, nil, 0, 4, 1, 0); st != nd.ErrInvalidParameter4 {
		t.Fatalf("no SRQ = %v", st)
	}
	for i := range 4 {
		sg := srv.sge(64*i, 64)
		want(t, "SRQ Receive", srq.Receive(uintptr(0x700+i), &sg, 1), nd.Success)
	}
	sg := srv.sge(0, 64)
	want(t, "SRQ Receive beyond its depth", srq.Receive(0x799, &sg, 1), nd.ErrNoMoreEntries)
	want(t, "Modify", srq.Modify(6, 0), nd.Success)
	want(t, "SRQ Receive after growing", srq.Receive(0x704, &sg, 1), nd.Success)
	want(t, "Modify below the posted", srq.Modify(2, 0), nd.ErrBufferOverflow)

	// Two clients, one per queue pair.
	ls, _ := srv.ad.CreateListener(ndabi.IIDIND2Listener, srv.fh)
	any := sockaddr(netip.AddrPortFrom(netip.IPv4Unspecified(), 0))
	want(t, "Bind", ls.Bind(ptr(any), uintptr(len(any))), nd.Success)
	want(t, "Listen", ls.Listen(0), nd.Success)
	var la [16]byte
	n := uint32(16)
	ls.GetLocalAddress(unsafe.Pointer(&la), &n)
	dest := sockaddr(func() netip.AddrPort { ap, _ := ndabi.ParseSockaddr(la[:n]); return ap }())
	var clis [2]*v2Side
	for i := range clis {
		clis[i] = openV2(t, tr)
		c := clis[i]
		conn, _ := srv.ad.CreateConnector(ndabi.IIDIND2Connector, srv.fh)
		var lov, cov, aov ndabi.Overlapped
		want(t, "GetConnectionRequest", ls.GetConnectionRequest(conn, &lov), nd.Pending)
		want(t, "Connect", c.conn.Connect(c.qp, ptr(dest), uintptr(len(dest)), 0, 0, nil, 0, &cov), nd.Pending)
		finish(t, "GetConnectionRequest", &ls.Base, &lov, nd.Success)
		packet(t, srv.file, &lov, nd.Success)
		want(t, "Accept", conn.Accept(qps[i], 0, 0, nil, 0, &aov), nd.Pending)
		finish(t, "Connect", &c.conn.Base, &cov, nd.Success)
		packet(t, c.file, &cov, nd.Success)
		want(t, "CompleteConnect", c.conn.CompleteConnect(&cov), nd.Pending)
		finish(t, "CompleteConnect", &c.conn.Base, &cov, nd.Success)
		packet(t, c.file, &cov, nd.Success)
		finish(t, "Accept", &conn.Base, &aov, nd.Success)
		packet(t, srv.file, &aov, nd.Success)
		defer conn.Release()
	}
	var nov ndabi.Overlapped
	want(t, "SRQ Notify", srq.Notify(&nov), nd.Pending)
	for i, c := range clis {
		copy(c.buf, "from client")
		s := c.sge(0, 11+i)
		want(t, "Send", c.qp.Send(uintptr(0x900+i), &s, 1, 0), nd.Success)
		c.expect(t, uintptr(0x900+i), ndabi.RequestSend, nd.Success, 0)
	}
	seen := map[uintptr]uintptr{}
	for range 2 {
		r := srv.reap(t)
		if r.Status != 0 || r.RequestType != ndabi.RequestReceive {
			t.Fatalf("SRQ completion %+v", r)
		}
		seen[r.QueuePairContext] = uintptr(r.BytesTransferred)
	}
	if seen[0xA0] != 11 || seen[0xA1] != 12 {
		t.Fatalf("SRQ completions by queue pair context: %v", seen)
	}
	// 5 posted, 2 taken: 3 wait, not below the threshold of 2 yet.
	if st := srq.GetOverlappedResult(&nov, false); st != nd.Pending {
		t.Fatalf("SRQ Notify fired early: %v", st)
	}
	want(t, "Modify the threshold", srq.Modify(0, 4), nd.Success)
	finish(t, "SRQ Notify", &srq.Base, &nov, nd.Success)
	packet(t, srv.file, &nov, nd.Success)
}

// TestSilentSlots: a queue pair's initiator slots stay taken by silent
// requests until a later request of the queue is reaped, as on hardware.
func TestSilentSlots(t *testing.T) {
	tr := transports(t)[0]
	srv, cli := openV2(t, tr), openV2(t, tr)
	// Queue pairs of 4 initiator slots.
	for _, s := range []*v2Side{srv, cli} {
		s.qp.Release()
		var st nd.Status
		s.qp, st = s.ad.CreateQueuePair(ndabi.IIDIND2QueuePair, s.cq, s.cq, qpContext, 16, 4, 2, 2, 0)
		want(t, "CreateQueuePair", st, nd.Success)
	}
	connectV2(t, srv, cli)
	for i := range 8 {
		r := srv.sge(64*i, 64)
		want(t, "Receive", srv.qp.Receive(uintptr(i), &r, 1), nd.Success)
	}
	s := cli.sge(0, 8)
	for i := range 3 {
		want(t, "silent Send", cli.qp.Send(uintptr(i), &s, 1, uint32(nd.FlagSilentSuccess)), nd.Success)
	}
	want(t, "signaled Send", cli.qp.Send(3, &s, 1, 0), nd.Success)
	want(t, "a fifth Send with four slots", cli.qp.Send(4, &s, 1, 0), nd.ErrNoMoreEntries)
	cli.expect(t, 3, ndabi.RequestSend, nd.Success, 0)
	for i := 4; i < 8; i++ {
		want(t, "Send after the reap", cli.qp.Send(uintptr(i), &s, 1, 0), nd.Success)
	}
}
