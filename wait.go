package nd

import (
	"context"
	"runtime"
	"time"
)

// Waiter waits for completions on a completion queue: it polls with
// GetResults, for up to Spin, and then blocks in Notify until one arrives,
// as UCX's ucp_worker_wait and libfabric's fi_cq_sread do. The zero value
// blocks at the first empty poll. A Waiter holds no state: one value may
// serve any number of goroutines and queues at once.
type Waiter struct {
	// Spin is how long WaitResults polls an empty queue before it blocks.
	// A completion that comes within it is taken without a sleep and a
	// wake-up, which cost tens of microseconds, at the price of a busy
	// processor meanwhile (a latency-bound loop polls for 10 to 100 µs;
	// code that is not latency-bound leaves it 0). 0 blocks at the first
	// empty poll; a negative Spin never blocks: it polls until a
	// completion comes or ctx ends.
	Spin time.Duration
}

// Polling gives the processor away once per yieldPeriod (read from the
// clock every pollsPerClock empty polls: a clock read costs more than an
// empty poll), so that other goroutines of the process (a peer in the same
// process, a provider's goroutines) run even with GOMAXPROCS=1; the
// context is looked at every checkEvery empty polls.
const (
	yieldPeriod   = 2 * time.Microsecond
	pollsPerClock = 4
	checkEvery    = 4096
)

// WaitResults fills results with completions of cq, as GetResults does,
// and returns how many, at least one: it polls for up to w.Spin, then
// blocks in cq.Notify(ctx, NotifyAny) until a completion arrives, and takes
// it. It returns 0 and an error when ctx ends first (an *OpError for which
// errors.Is holds for ErrCanceled and for ctx's error), or when Notify
// fails otherwise (ErrBufferOverflow: the queue overran; ErrInvalidHandle
// or ErrDeviceRemoved: the queue or its adapter closed, after GetResults
// drained what it held). Completions already queued are returned even if
// ctx has ended. An empty results is an *ArgError. Safe for concurrent use
// with other GetResults and Notify calls on cq; each completion goes to
// one caller. It allocates nothing while it polls.
func (w Waiter) WaitResults(ctx context.Context, cq CompletionQueue, results []*Result) (int, error) {
	if n := cq.GetResults(results); n > 0 {
		return n, nil
	}
	if len(results) == 0 {
		return 0, &ArgError{Op: "WaitResults", Arg: "results", Status: ErrInvalidParameter, Reason: "empty: no room for a completion"}
	}
	if w.Spin != 0 {
		if n, err := w.poll(ctx, cq, results); n > 0 || err != nil {
			return n, err
		}
	}
	for {
		// A completion that arrived after the empty GetResults fires the
		// notification at once (CompletionQueue.Notify): none is missed.
		if err := cq.Notify(ctx, NotifyAny); err != nil {
			return 0, err
		}
		if n := cq.GetResults(results); n > 0 {
			return n, nil
		}
	}
}

// clockBase is the origin of the polls' clock: time.Since it reads only the
// monotonic clock, half the cost of time.Now.
var clockBase = time.Now()

// poll polls cq for w.Spin (for ever if it is negative), counted from its
// first look at the clock; it returns 0 and nil when the time is up. A
// completion that comes within the first few polls costs no clock read.
func (w Waiter) poll(ctx context.Context, cq CompletionQueue, results []*Result) (int, error) {
	var start, yielded time.Duration
	for polls := 1; ; polls++ {
		if n := cq.GetResults(results); n > 0 {
			return n, nil
		}
		if polls%pollsPerClock != 0 {
			continue
		}
		now := time.Since(clockBase)
		switch {
		case polls == pollsPerClock:
			start, yielded = now, now
		case w.Spin > 0 && now-start >= w.Spin:
			return 0, nil
		case now-yielded >= yieldPeriod:
			runtime.Gosched()
			yielded = time.Since(clockBase)
		}
		if polls%checkEvery == 0 {
			if err := ctx.Err(); err != nil {
				return 0, &OpError{Op: "WaitResults", Status: ErrCanceled, Err: err}
			}
		}
	}
}

// WaitResults is Waiter{}.WaitResults: it takes the completions cq holds,
// or blocks in Notify until one arrives. The examples of this package use
// it to wait for one request:
//
//	var done [1]*nd.Result
//	if _, err := nd.WaitResults(ctx, cq, done[:]); err != nil { ... }
//	if err := done[0].Err(); err != nil { ... }
func WaitResults(ctx context.Context, cq CompletionQueue, results []*Result) (int, error) {
	return Waiter{}.WaitResults(ctx, cq, results)
}
