package engine

import (
	"context"
	"net/netip"
	"sync/atomic"
	"testing"
	"time"

	"github.com/godirect/nd"
)

// pollLink is a Link whose inbound traffic moves only when Poll is called:
// each Poll delivers one pending message into the next Receive.
type pollLink struct {
	ep      *Endpoint
	pending atomic.Int32 // messages waiting to be "received"
	polls   atomic.Int32
	watches atomic.Int32
}

func (l *pollLink) LocalAddr() netip.AddrPort               { return netip.AddrPort{} }
func (l *pollLink) RemoteAddr() netip.AddrPort              { return netip.AddrPort{} }
func (l *pollLink) Accept(int, int, []byte) error           { return nil }
func (l *pollLink) Reject([]byte) error                     { return nil }
func (l *pollLink) Ready() error                            { return nil }
func (l *pollLink) Attach(ep *Endpoint)                     { l.ep = ep }
func (l *pollLink) Transmit(*WorkRequest) (bool, nd.Status) { return true, nd.Success }
func (l *pollLink) Close(nd.Status)                         {}

func (l *pollLink) Poll() bool {
	l.polls.Add(1)
	if l.pending.Load() == 0 {
		return false
	}
	l.pending.Add(-1)
	wr, st := l.ep.TakeReceive(3)
	if st != nd.Success {
		return false
	}
	copy(wr.SGL[0].Buffer, "abc")
	l.ep.CompleteReceive(wr, 3, nd.Success, false)
	return true
}

func (l *pollLink) Watch() { l.watches.Add(1) }

// A link that implements Poller is polled by GetResults when the queue is
// empty, and the completion Poll produces is returned by that same call;
// Notify polls before it waits (a completion that Poll produces satisfies
// it) and calls Watch when it does wait. Once the connection ended the
// link is no longer polled.
func TestPoller(t *testing.T) {
	a := newTestAdapter(t)
	cq := newTestCQ(t, a)
	e := newTestEndpoint(t, a, cq, cq, 2)
	ep := e.(*Endpoint)
	link := &pollLink{}
	if err := ep.attach(link, 0, 0); err != nil {
		t.Fatal(err)
	}
	ep.ready()

	mem := make([]byte, 8)
	mr, err := a.RegisterMemory(context.Background(), mem)
	if err != nil {
		t.Fatal(err)
	}
	var r1, r2 nd.Result
	if err := e.Receive(&r1, []nd.SGE{{Buffer: mem[:4], Region: mr}}); err != nil {
		t.Fatal(err)
	}
	if err := e.Receive(&r2, []nd.SGE{{Buffer: mem[4:], Region: mr}}); err != nil {
		t.Fatal(err)
	}
	var res [2]*nd.Result

	// Nothing pending: GetResults polls and returns nothing.
	if n := cq.GetResults(res[:]); n != 0 {
		t.Fatalf("GetResults with nothing arrived = %d, want 0", n)
	}
	if got := link.polls.Load(); got != 1 {
		t.Fatalf("Poll calls after one empty GetResults = %d, want 1", got)
	}
	// One message arrives: the GetResults that polls returns its Receive.
	link.pending.Store(1)
	if n := cq.GetResults(res[:]); n != 1 || res[0] != &r1 || r1.Status != nd.Success || r1.BytesTransferred != 3 {
		t.Fatalf("GetResults after an arrival = %d (%v), want the first Receive with 3 bytes", n, res[0])
	}
	if string(mem[:3]) != "abc" {
		t.Fatalf("Receive buffer = %q, want abc", mem[:3])
	}
	// Notify: what Poll delivers satisfies it without Watch.
	link.pending.Store(1)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := cq.Notify(ctx, nd.NotifyAny); err != nil {
		t.Fatalf("Notify with a message waiting to be polled: %v", err)
	}
	if got := link.watches.Load(); got != 0 {
		t.Fatalf("Watch calls after a Notify that Poll satisfied = %d, want 0", got)
	}
	polled := link.polls.Load()
	if n := cq.GetResults(res[:]); n != 1 || res[0] != &r2 {
		t.Fatalf("GetResults after Notify = %d, want the second Receive", n)
	}
	// A GetResults that finds a completion does not poll (a link counts
	// Poll calls as the application polling an empty queue).
	if got := link.polls.Load(); got != polled {
		t.Fatalf("Poll calls grew from %d to %d in a GetResults that found a completion", polled, got)
	}
	// Nothing arrives: Notify waits, after Watch.
	short, cancel2 := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel2()
	if err := cq.Notify(short, nd.NotifyAny); nd.StatusOf(err) != nd.ErrCanceled {
		t.Fatalf("Notify with nothing arriving = %v, want ND_CANCELED when its context ends", err)
	}
	if got := link.watches.Load(); got != 1 {
		t.Fatalf("Watch calls after a Notify that waited = %d, want 1", got)
	}
	// The connection ends: the link is polled no more.
	if err := e.Flush(); err != nil {
		t.Fatal(err)
	}
	before := link.polls.Load()
	cq.GetResults(res[:])
	cq.GetResults(res[:])
	if got := link.polls.Load(); got != before {
		t.Fatalf("Poll calls after the connection ended grew from %d to %d", before, got)
	}
}
