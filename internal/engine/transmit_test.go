package engine

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/godirect/nd"
)

// gateLink is a Link whose Transmit, until closed is set, reports each
// call on entered and returns only when the test sends on release; once
// closed is set it refuses the request with ErrCanceled at once, as a
// closed transport does.
type gateLink struct {
	quietLink
	closed   atomic.Bool
	entered  chan struct{}
	release  chan struct{}
	returned atomic.Int32 // Transmit calls that returned
	late     atomic.Int32 // Transmit calls that found closed set
}

func (l *gateLink) Transmit(*WorkRequest) (bool, nd.Status) {
	defer l.returned.Add(1)
	if l.closed.Load() {
		l.late.Add(1)
		return true, nd.ErrCanceled
	}
	l.entered <- struct{}{}
	<-l.release
	return true, nd.Success
}

// WaitTransmit returns at once when no pump runs; while a Transmit is
// under way it waits for that call and for every other the pump makes
// before it ends, and a Transmit after it returns finds the link's closed
// mark (set before the call).
func TestWaitTransmit(t *testing.T) {
	a := newTestAdapter(t)
	cq := newTestCQ(t, a)
	link := &gateLink{entered: make(chan struct{}), release: make(chan struct{})}
	ep := newAttachedEndpoint(t, a, cq, link, 1, 2)
	e := nd.Endpoint(ep)
	mem := make([]byte, 8)
	mr, err := a.RegisterMemory(context.Background(), mem)
	if err != nil {
		t.Fatal(err)
	}
	sgl := []nd.SGE{{Buffer: mem, Region: mr}}

	ep.WaitTransmit() // nothing pumps: returns at once

	// The first Send's Transmit blocks in the poster's pump; the second
	// Send, posted meanwhile, waits for that pump.
	var r1, r2 nd.Result
	posted := make(chan error, 1)
	go func() { posted <- e.Send(&r1, sgl, 0) }()
	<-link.entered
	if err := e.Send(&r2, sgl, 0); err != nil {
		t.Fatal(err)
	}
	link.closed.Store(true)
	waited := make(chan struct{})
	go func() {
		ep.WaitTransmit()
		close(waited)
	}()
	deadline := time.Now().Add(10 * time.Second)
	for {
		ep.mu.Lock()
		n := ep.pumpWaiters
		ep.mu.Unlock()
		if n == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("WaitTransmit did not start waiting for the pump")
		}
	}
	select {
	case <-waited:
		t.Fatal("WaitTransmit returned while a Transmit was under way")
	default:
	}
	link.release <- struct{}{}
	<-waited
	if got := link.returned.Load(); got != 2 {
		t.Fatalf("%d Transmit calls had returned when WaitTransmit did, want 2 (the pump's both)", got)
	}
	if got := link.late.Load(); got != 1 {
		t.Fatalf("%d Transmit calls found the closed mark, want 1 (the second Send's)", got)
	}
	if err := <-posted; err != nil {
		t.Fatal(err)
	}
	var out [2]*nd.Result
	if n := cq.GetResults(out[:]); n != 2 || out[0] != &r1 || r1.Status != nd.Success || out[1] != &r2 || r2.Status != nd.ErrCanceled {
		t.Fatalf("completions after WaitTransmit: %d (%v, %v), want the first Send's success and the second's ND_CANCELED", n, r1.Status, r2.Status)
	}
	ep.WaitTransmit() // the pump ended: returns at once
}
