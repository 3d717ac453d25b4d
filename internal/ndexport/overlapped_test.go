package ndexport

import (
	"net/netip"
	"testing"
	"unsafe"

	"github.com/godirect/nd"
	"github.com/godirect/nd/internal/ndabi"
	"github.com/godirect/nd/provider/loop"
)

func loopAdapter2(t *testing.T) (*Adapter2, uintptr, File) {
	t.Helper()
	tr := &Transport{Name: "loop", Provider: loop.New()}
	p := NewProvider2(tr)
	defer p.Release()
	sa := sockaddr(netip.AddrPortFrom(localhost, 0))
	var id uint64
	want(t, "ResolveAddress", p.ResolveAddress(ptr(sa), uintptr(len(sa)), &id), nd.Success)
	ad, st := p.OpenAdapter(ndabi.IIDIND2Adapter, id)
	want(t, "OpenAdapter", st, nd.Success)
	t.Cleanup(func() { ad.Release() })
	var h uintptr
	want(t, "CreateOverlappedFile", ad.CreateOverlappedFile(&h), nd.Success)
	f, _ := ad.file(h)
	return ad, h, f
}

// TestCancelOrder is the pattern of ND's ndcq test: Notify requests on two
// queues (and two on one), canceled in either order; each cancel's packet
// is queued, in the order of the cancels, by the time
// CancelOverlappedRequests returns, and GetOverlappedResult without
// waiting says ND_CANCELED.
func TestCancelOrder(t *testing.T) {
	ad, h, f := loopAdapter2(t)
	cq1, st := ad.CreateCompletionQueue(ndabi.IIDIND2CompletionQueue, h, 64)
	want(t, "CreateCompletionQueue", st, nd.Success)
	cq2, _ := ad.CreateCompletionQueue(ndabi.IIDIND2CompletionQueue, h, 64)
	defer cq1.Release()
	defer cq2.Release()
	var ov1, ov2 ndabi.Overlapped
	for i := 0; i < 200; i++ {
		for _, c := range []struct {
			name                string
			first, second       *CQ2
			cancelA, cancelB    *CQ2
			firstOut, secondOut *ndabi.Overlapped
		}{
			{"in order", cq1, cq2, cq1, cq2, &ov1, &ov2},
			{"reverse order", cq1, cq2, cq2, cq1, &ov2, &ov1},
			{"one queue", cq1, cq1, cq1, nil, &ov1, &ov2},
		} {
			want(t, c.name+": Notify", c.first.Notify(uint32(nd.NotifyAny), &ov1), nd.Pending)
			want(t, c.name+": Notify", c.second.Notify(uint32(nd.NotifyAny), &ov2), nd.Pending)
			want(t, c.name+": cancel", c.cancelA.CancelOverlappedRequests(), nd.Success)
			if c.cancelB != nil {
				want(t, c.name+": cancel", c.cancelB.CancelOverlappedRequests(), nd.Success)
			}
			for _, ov := range []*ndabi.Overlapped{c.firstOut, c.secondOut} {
				p, ok := f.(*MemoryFile).Dequeue(false)
				if !ok || p.Overlapped != ov || p.Status != statusCancelled {
					t.Fatalf("%s, round %d: packet %+v %v, want %p canceled", c.name, i, p, ok, ov)
				}
				want(t, c.name+": GetOverlappedResult", c.first.GetOverlappedResult(ov, false), nd.ErrCanceled)
			}
		}
	}
}

// TestLowBitEvent: a request whose event has its lowest bit set completes
// without a packet; the event (without the bit) is set.
func TestLowBitEvent(t *testing.T) {
	ad, h, f := loopAdapter2(t)
	mr, st := ad.CreateMemoryRegion(ndabi.IIDIND2MemoryRegion, h)
	want(t, "CreateMemoryRegion", st, nd.Success)
	defer mr.Release()
	buf := make([]byte, 64)
	ov := ndabi.Overlapped{Event: 0x1235}
	want(t, "Register", mr.Register(ptr(buf), 64, ndabi.MRFlagAllowLocalWrite, &ov), nd.Pending)
	finish(t, "Register", &mr.Base, &ov, nd.Success)
	noPacket(t, f)
	if n := f.(*MemoryFile).Signaled(0x1234); n != 1 {
		t.Fatalf("event set %d times", n)
	}
	if ov.Internal != 0 {
		t.Fatalf("OVERLAPPED.Internal = %#x after success", ov.Internal)
	}
	// The same OVERLAPPED asked about through another object (as ND's
	// ndmrrate does) gives the same answer.
	want(t, "GetOverlappedResult through the adapter's queue", (&ad.Base).GetOverlappedResult(&ov, false), nd.Success)
	// A request on an OVERLAPPED still in use is refused.
	ov2 := ndabi.Overlapped{}
	cq, _ := ad.CreateCompletionQueue(ndabi.IIDIND2CompletionQueue, h, 4)
	defer cq.Release()
	want(t, "Notify", cq.Notify(uint32(nd.NotifyAny), &ov2), nd.Pending)
	want(t, "Notify on the same OVERLAPPED", cq.Notify(uint32(nd.NotifyAny), &ov2), nd.ErrInvalidParameter2)
	want(t, "Notify of an unknown type", cq.Notify(9, &ndabi.Overlapped{}), nd.ErrInvalidParameter1)
	want(t, "Notify without OVERLAPPED", cq.Notify(1, nil), nd.ErrInvalidParameter2)
	cq.CancelOverlappedRequests()
	packet(t, f, &ov2, nd.ErrCanceled)
	var unknown ndabi.Overlapped
	want(t, "GetOverlappedResult of an OVERLAPPED never used", cq.GetOverlappedResult(&unknown, false), nd.ErrInvalidParameter1)
	if unsafe.Sizeof(unknown) != 32 {
		t.Fatal("OVERLAPPED is 32 bytes")
	}
}
