package ndexport

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/godirect/nd"
	"github.com/godirect/nd/internal/ndabi"
)

// overlappedOps are an object's pending overlapped requests, in the order
// they were made, for CancelOverlappedRequests.
type overlappedOps struct {
	mu      sync.Mutex
	pending []*op
}

type opState uint8

const (
	opPending    opState = iota // the nd call runs
	opCompleting                // the kernel completes the consumer's I/O
	opDone                      // the OVERLAPPED is the consumer's again
)

// op is one overlapped request.
type op struct {
	ov     *ndabi.Overlapped
	cancel context.CancelFunc
	state  opState // under requests.mu
	status nd.Status
	done   chan struct{} // closed at opDone
}

// requests maps each OVERLAPPED a request used to its latest request, for
// GetOverlappedResult, which a consumer may call on another object than
// the one it made the request of (ND's own tools do). Finished requests
// stay until their OVERLAPPED is used again; beyond keepFinished, the
// oldest are forgotten.
var requests = struct {
	mu       sync.Mutex
	byOV     map[*ndabi.Overlapped]*op
	finished []*op // oldest first
}{byOV: map[*ndabi.Overlapped]*op{}}

const keepFinished = 4096

// start makes an overlapped request of b: run carries out the nd call and
// returns its ND status; the request completes through f. It returns
// ND_PENDING, or busy when ov is in use by a request not yet complete. The
// request holds b until it is done.
func (b *Base) start(f File, ov *ndabi.Overlapped, busy nd.Status, run func(ctx context.Context) nd.Status) nd.Status {
	return b.startInOrder(f, ov, busy, func() func(ctx context.Context) nd.Status { return run })
}

// startInOrder is start for a request whose first half must happen before
// the call returns, so that requests keep the order they were made in:
// begin runs on the caller's goroutine once ov is taken, and the function
// it returns finishes the request on another.
func (b *Base) startInOrder(f File, ov *ndabi.Overlapped, busy nd.Status, begin func() func(ctx context.Context) nd.Status) nd.Status {
	ctx, cancel := context.WithCancel(context.Background())
	o := &op{ov: ov, cancel: cancel, done: make(chan struct{})}
	requests.mu.Lock()
	if x := requests.byOV[ov]; x != nil && x.state != opDone {
		requests.mu.Unlock()
		cancel()
		return busy
	}
	requests.byOV[ov] = o
	requests.mu.Unlock()
	b.ops.mu.Lock()
	b.ops.pending = append(b.ops.pending, o)
	b.ops.mu.Unlock()
	atomic.StoreUintptr(&ov.InternalHigh, 0)
	atomic.StoreUintptr(&ov.Internal, ndabi.STATUS_PENDING)
	b.hold()
	run := begin()
	go func() {
		st := run(ctx)
		cancel()
		b.finish(f, o, st)
		b.unhold()
	}()
	return nd.Pending
}

// finish completes o with st through f.
func (b *Base) finish(f File, o *op, st nd.Status) {
	requests.mu.Lock()
	o.state, o.status = opCompleting, st
	requests.mu.Unlock()
	f.Complete(o.ov, st)
	b.ops.mu.Lock()
	for i, x := range b.ops.pending {
		if x == o {
			b.ops.pending = append(b.ops.pending[:i], b.ops.pending[i+1:]...)
			break
		}
	}
	b.ops.mu.Unlock()
	requests.mu.Lock()
	o.state = opDone
	requests.finished = append(requests.finished, o)
	for len(requests.finished) > keepFinished {
		old := requests.finished[0]
		requests.finished = requests.finished[1:]
		if requests.byOV[old.ov] == old {
			delete(requests.byOV, old.ov)
		}
	}
	requests.mu.Unlock()
	close(o.done)
}

// CancelOverlappedRequests cancels b's pending overlapped requests, oldest
// first, each completing with the status its nd call returns when canceled
// (ND_CANCELED, unless it finished just before); it returns ND_SUCCESS once
// every one of them is completed, its packet queued.
func (b *Base) CancelOverlappedRequests() nd.Status {
	b.ops.mu.Lock()
	pending := append([]*op(nil), b.ops.pending...)
	b.ops.mu.Unlock()
	for _, x := range pending {
		x.cancel()
		<-x.done
	}
	return nd.Success
}

// GetOverlappedResult is the ND status of the request that last used ov
// (made of b or of another object: a consumer may ask any): ND_PENDING
// while its nd call runs and wait is false; otherwise, once it is complete
// and the kernel is done with ov, its final status. A request completing
// when the call is made is waited for even when wait is false: its packet
// may be out already. An ov that no request used is ND_INVALID_PARAMETER_1.
func (b *Base) GetOverlappedResult(ov *ndabi.Overlapped, wait bool) nd.Status {
	requests.mu.Lock()
	o := requests.byOV[ov]
	var state opState
	if o != nil {
		state = o.state
	}
	requests.mu.Unlock()
	switch {
	case o == nil:
		return nd.ErrInvalidParameter1
	case state == opPending && !wait:
		return nd.Pending
	}
	<-o.done
	if wait && ov.Event&^1 != 0 {
		// Waiting for a request consumes its event's signal, as
		// kernel32's GetOverlappedResult does by waiting on it: an
		// auto-reset event the consumer reuses is not left set by a
		// request it already waited for.
		consumeEvent(ov.Event &^ 1)
	}
	return o.status
}
