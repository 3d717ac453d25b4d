package engine

import (
	"sync/atomic"

	"github.com/godirect/nd"
)

// Holds: a transport that moves a remote access's bytes after the access
// was checked (an inbound RDMA Write placed as the socket delivers it, a
// Read response sent from the window by a writer goroutine) takes a Hold
// with HoldAccess and releases it when it no longer touches the bytes.
// While a window has a Hold out, an Invalidate of it is not reported
// complete, and while a region has one, DeregisterMemory waits: once the
// application learns that a window is invalidated, or that a region is
// deregistered, no byte of it is read or written on a peer's behalf.
//
// A window's count covers all its bindings: an Invalidate waits also for
// holds a previous binding left (a connection that is ending releases them
// as its goroutines stop). Window.Close and the end of a connection unbind
// without waiting; DeregisterMemory, which the application must call before
// it reuses the memory, waits for them. A peer's SendAndInvalidate does not
// wait either: its own earlier Writes were placed before its Send was read,
// and what may still be in flight is the response to its own earlier Read.
//
// Release takes no lock unless someone waits for the count to reach zero.

// holdCount counts the holds of a window or a region. waiting is set, with
// the adapter's windowMu held, by an Invalidate or DeregisterMemory that
// found holds out; the Release that takes the count to zero then finishes
// their wait (holdsEnded).
type holdCount struct {
	n       atomic.Int32
	waiting atomic.Bool
}

// Hold is a remote access in progress on a window's bytes, from HoldAccess
// to Release. The zero Hold holds nothing. A Hold is a value; it must be
// released exactly once.
type Hold struct {
	w *Window
	r *Region
}

// pendingInvalidate is an Invalidate whose window had holds out when it was
// unbound: it completes when they are released.
type pendingInvalidate struct {
	ep  *Endpoint
	wr  *WorkRequest
	seq uint64
}

// HoldAccess is AccessFault that also takes a Hold on the window and its
// region: the returned bytes stay the application's window, not yet
// reported invalidated or deregistered, until h.Release. It allocates
// nothing.
func (ep *Endpoint) HoldAccess(token uint32, addr uint64, length int, write bool) (mem []byte, h Hold, f Fault) {
	a := ep.a
	a.windowMu.RLock()
	mem, w, f := ep.accessLocked(token, addr, length, write)
	if f == FaultNone {
		w.holds.n.Add(1)
		w.region.holds.n.Add(1)
		h = Hold{w: w, r: w.region}
	}
	a.windowMu.RUnlock()
	return mem, h, f
}

// Release ends the hold. An Invalidate of the window and a
// DeregisterMemory of the region that waited for it may complete. Safe for
// concurrent use with everything but a second Release of the same Hold.
func (h Hold) Release() {
	if h.w == nil {
		return
	}
	w, r := h.w, h.r
	wDone := w.holds.n.Add(-1) == 0 && w.holds.waiting.Load()
	rDone := r.holds.n.Add(-1) == 0 && r.holds.waiting.Load()
	if wDone || rDone {
		w.a.holdsEnded(w, r)
	}
}

// holdsEnded finishes the waits on w's and r's holds if their counts are
// zero.
func (a *Adapter) holdsEnded(w *Window, r *Region) {
	a.windowMu.Lock()
	var done []pendingInvalidate
	if w.holds.waiting.Load() && w.holds.n.Load() == 0 {
		w.holds.waiting.Store(false)
		done, w.pending = w.pending, nil
	}
	if r.holds.waiting.Load() && r.holds.n.Load() == 0 {
		r.holds.waiting.Store(false)
		close(r.drained)
		r.drained = nil
	}
	a.windowMu.Unlock()
	for _, p := range done {
		p.ep.CompleteOutbound(p.wr, p.seq, nd.Success)
	}
}

// waitHoldsLocked is called by an Invalidate that has just unbound w,
// windowMu held: it reports true when w has no hold out (the Invalidate
// completes now), and otherwise queues wr to complete at the last Release.
func (w *Window) waitHoldsLocked(ep *Endpoint, wr *WorkRequest) bool {
	if w.holds.n.Load() == 0 {
		return true
	}
	w.holds.waiting.Store(true)
	// A Release between the load above and the store would not have
	// seen waiting.
	if w.holds.n.Load() == 0 && len(w.pending) == 0 {
		w.holds.waiting.Store(false)
		return true
	}
	w.pending = append(w.pending, pendingInvalidate{ep: ep, wr: wr, seq: wr.Seq})
	return false
}

// drainedLocked returns nil when r has no hold out, and otherwise a
// channel closed at the last Release; windowMu held.
func (r *Region) drainedLocked() <-chan struct{} {
	if r.holds.n.Load() == 0 {
		return nil
	}
	if r.drained == nil {
		r.drained = make(chan struct{})
	}
	r.holds.waiting.Store(true)
	if r.holds.n.Load() == 0 {
		r.holds.waiting.Store(false)
		close(r.drained)
		r.drained = nil
		return nil
	}
	return r.drained
}

// WindowHeld reports whether a transport holds a remote access through mw
// (HoldAccess, not yet released), for transports' tests that must know an
// access is in progress. mw must come from an engine adapter.
func WindowHeld(mw nd.MemoryWindow) bool {
	w, ok := mw.(*Window)
	return ok && w.holds.n.Load() > 0
}
