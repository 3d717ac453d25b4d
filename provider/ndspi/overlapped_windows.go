//go:build windows && (amd64 || arm64)

package ndspi

import (
	"context"
	"runtime"
	"sync/atomic"

	"github.com/godirect/nd"
	"github.com/godirect/nd/internal/ndabi"
)

// guard is the life of an object that makes overlapped requests (every
// ND object but endpoints, queue pairs and windows): whether it closed, the
// requests under way, and how many times its requests were canceled. Its
// methods are safe for concurrent use.
//
// Closing cancels the requests under way (CancelOverlappedRequests) and
// waits for each to see its completion and ask GetOverlappedResult, so
// that the object is released only when the provider will write none of
// its OVERLAPPEDs any more. A request made while the object closes is
// canceled by its maker (see request.do).
//
// Its lock is a spinLock: a call that has not yet handed its request to
// the provider never parks (a caller may take a parked call for one that
// waits for the provider, and act on that: ND's CQ Notify rule).
type guard struct {
	mu         spinLock
	closed     bool
	busy       int
	cancels    uint64
	idle       chan struct{} // made by close, closed once no call is under way
	idleClosed bool
}

// enter counts a call under way; false once the object closed.
func (g *guard) enter() bool {
	g.mu.lock()
	defer g.mu.unlock()
	if g.closed {
		return false
	}
	g.busy++
	return true
}

// exit ends what enter counted.
func (g *guard) exit() {
	g.mu.lock()
	g.busy--
	if g.busy == 0 && g.closed && !g.idleClosed {
		close(g.idle)
		g.idleClosed = true
	}
	g.mu.unlock()
}

// isClosed reports whether the object closed.
func (g *guard) isClosed() bool {
	g.mu.lock()
	defer g.mu.unlock()
	return g.closed
}

// cancelCount is how many times the object's requests were canceled.
func (g *guard) cancelCount() uint64 {
	g.mu.lock()
	defer g.mu.unlock()
	return g.cancels
}

// cancel cancels every overlapped request of obj under way
// (CancelOverlappedRequests, the same slot in every overlapped interface).
func (g *guard) cancel(obj com) {
	g.mu.lock()
	g.cancels++
	g.mu.unlock()
	obj.call(ndabi.SlotCancelOverlappedRequests)
}

// close marks the object closed, cancels its requests and waits until
// every call under way returned. It reports whether this call closed it
// (false: it was closed already; the wait is done all the same).
func (g *guard) close(obj com) bool {
	g.mu.lock()
	first := !g.closed
	g.closed = true
	if g.idle == nil {
		g.idle = make(chan struct{})
		if g.busy == 0 {
			close(g.idle)
			g.idleClosed = true
		}
	}
	busy, idle := g.busy, g.idle
	g.mu.unlock()
	if busy > 0 && obj != 0 {
		g.cancel(obj)
	}
	<-idle
	return first
}

// spinLock is a lock whose waiters spin (yielding the processor) instead
// of parking, for critical sections of a few instructions.
type spinLock struct{ v atomic.Int32 }

func (l *spinLock) lock() {
	for !l.v.CompareAndSwap(0, 1) {
		runtime.Gosched()
	}
}

func (l *spinLock) unlock() { l.v.Store(0) }

// request is one overlapped call: obj's method, which issue calls with
// the OVERLAPPED's address, made of an object of the ND version v1 or not
// (GetOverlappedResult differs) and named op in errors.
type request struct {
	port   *port
	g      *guard
	obj    com
	v1     bool
	op     string
	closed func() nd.Status // the status of a call on the closed object
	// again says that a cancellation that neither this request's context
	// nor its object's close asked for (CancelOverlappedRequests cancels
	// every request of the object, those of other calls too) makes the
	// request again, as for waits that can be repeated (Notify,
	// GetConnectionRequest, NotifyDisconnect, registrations).
	again bool
	// endsAnyway says that a cancellation this request's context did not
	// ask for (the object's close, another call's CancelOverlappedRequests)
	// is its success: Disconnect, whose connection ends all the same.
	endsAnyway bool
	// abandoned, if set, reports that the request's caller went away (a
	// connector waiting in GetConnectionRequest closed): a cancellation
	// then ends the request.
	abandoned func() bool
}

// do makes the request and waits for its outcome: ctx's end or the
// object's close cancel it (CancelOverlappedRequests on the object), and
// it returns only once the provider completed it and GetOverlappedResult
// gave its status, so that no OVERLAPPED is reused while the provider may
// write it. A request canceled by ctx or by the close returns an
// *nd.OpError with ErrCanceled (and ctx's error); another failure returns
// the bare status.
func (r *request) do(ctx context.Context, issue func(ov uintptr) nd.Status) error {
	if err := ctx.Err(); err != nil {
		return &nd.OpError{Op: r.op, Status: nd.ErrCanceled, Err: err}
	}
	if !r.g.enter() {
		return r.closed()
	}
	defer r.g.exit()
	w, err := r.port.get()
	if err != nil {
		return err
	}
	defer r.port.put(w)
	for {
		gen := r.g.cancelCount()
		st := issue(w.ov)
		if st != nd.Pending {
			// Done at once (ND_SUCCESS: no packet follows; the
			// completion port skips it) or refused.
			return st.Err()
		}
		if r.g.isClosed() {
			r.g.cancel(r.obj) // the close may have canceled before the request existed
		}
		canceled := false
		select {
		case <-w.done:
		case <-ctx.Done():
			canceled = true
			r.g.cancel(r.obj)
			<-w.done
		}
		st = r.result(w)
		for st == nd.Pending {
			// A provider may complete a request in phases: the
			// OVERLAPPED is its own until the last one.
			<-w.done
			st = r.result(w)
		}
		if st != nd.ErrCanceled {
			return st.Err()
		}
		switch {
		case canceled || ctx.Err() != nil:
			return &nd.OpError{Op: r.op, Status: nd.ErrCanceled, Err: ctx.Err()}
		case r.endsAnyway:
			return nil
		case r.g.isClosed() || r.abandoned != nil && r.abandoned():
			return &nd.OpError{Op: r.op, Status: nd.ErrCanceled}
		case r.again && r.g.cancelCount() != gen:
			clearOverlapped(w)
			continue
		}
		return &nd.OpError{Op: r.op, Status: nd.ErrCanceled}
	}
}

// result is GetOverlappedResult of the request's OVERLAPPED, without
// waiting (its packet came).
func (r *request) result(w *waiter) nd.Status {
	if r.v1 {
		return r.obj.call(ndabi.SlotGetOverlappedResult, w.ov, w.ov+ovBytes, 0)
	}
	return r.obj.call(ndabi.SlotGetOverlappedResult, w.ov, 0)
}

// clearOverlapped zeroes a record's OVERLAPPED for its next request.
func clearOverlapped(w *waiter) {
	for off := uintptr(0); off < ovOverlapSize; off += wordSize {
		*(*uintptr)(at(w.ov + off)) = 0
	}
	select {
	case <-w.done:
	default:
	}
}
