package engine

import (
	"context"
	"testing"

	"github.com/godirect/nd"
)

// An Invalidate of a window completes only when the last hold of it is
// released, DeregisterMemory of its region waits for the holds too, and a
// refused access takes no hold.
func TestHoldsFenceInvalidateAndDeregister(t *testing.T) {
	a := newTestAdapter(t)
	cq := newTestCQ(t, a)
	ep := newAttachedEndpoint(t, a, cq, &quietLink{}, 1, 4)
	e := nd.Endpoint(ep)
	mem := make([]byte, 64)
	mr, err := a.RegisterMemory(context.Background(), mem)
	if err != nil {
		t.Fatal(err)
	}
	mw, err := a.CreateMemoryWindow(nil)
	if err != nil {
		t.Fatal(err)
	}
	var bind, inv nd.Result
	desc, err := e.Bind(&bind, mr, mw, mem[8:40], nd.FlagAllowWrite|nd.FlagSilentSuccess)
	if err != nil {
		t.Fatal(err)
	}
	var out [2]*nd.Result

	if _, h, f := ep.HoldAccess(desc.Token+1, desc.Base, 8, true); f != FaultInvalidToken || h != (Hold{}) {
		t.Fatalf("HoldAccess with a wrong token = %v, %v; want FaultInvalidToken and no hold", f, h)
	}
	if _, h, f := ep.HoldAccess(desc.Token, desc.Base, 33, true); f != FaultBounds || h != (Hold{}) {
		t.Fatalf("HoldAccess past the window = %v, %v; want FaultBounds and no hold", f, h)
	}
	Hold{}.Release() // the zero Hold releases nothing
	b1, h1, f1 := ep.HoldAccess(desc.Token, desc.Base, 8, true)
	_, h2, f2 := ep.HoldAccess(desc.Token, desc.Base+24, 8, true)
	if f1 != FaultNone || f2 != FaultNone || &b1[0] != &mem[8] {
		t.Fatalf("HoldAccess inside the window = %v, %v", f1, f2)
	}

	if err := e.Invalidate(&inv, mw, 0); err != nil {
		t.Fatal(err)
	}
	if n := cq.GetResults(out[:]); n != 0 {
		t.Fatalf("the Invalidate completed (%v) with two holds out", out[0].Status)
	}
	// The window is unbound at once: no new access gets through.
	if _, _, f := ep.HoldAccess(desc.Token, desc.Base, 8, true); f != FaultInvalidToken {
		t.Fatalf("HoldAccess after the Invalidate was issued = %v, want FaultInvalidToken", f)
	}
	done, cancel := context.WithCancel(context.Background())
	cancel()
	if err := a.DeregisterMemory(done, mr); nd.StatusOf(err) != nd.ErrCanceled {
		t.Fatalf("DeregisterMemory with holds out and its context ended = %v, want ND_CANCELED", err)
	}
	h1.Release()
	if n := cq.GetResults(out[:]); n != 0 {
		t.Fatalf("the Invalidate completed (%v) with one hold out", out[0].Status)
	}
	deregistered := make(chan error, 1)
	go func() { deregistered <- a.DeregisterMemory(context.Background(), mr) }()
	h2.Release()
	if n := cq.GetResults(out[:]); n != 1 || out[0] != &inv || inv.Status != nd.Success {
		t.Fatalf("after the last release: %d completions, want the Invalidate with Success", n)
	}
	if err := <-deregistered; err != nil {
		t.Fatalf("DeregisterMemory waiting for the holds = %v, want nil once they are released", err)
	}
	if err := a.DeregisterMemory(done, mr); nd.StatusOf(err) != nd.ErrInvalidParameter1 {
		t.Fatalf("second DeregisterMemory = %v, want ND_INVALID_PARAMETER_1", err)
	}
}
