package main

// Data-path helpers shared by the data tests: reaping completions by polling
// or blocking, scatter/gather lists over a buffer, and a ring of Receives
// that are kept posted. None of them allocates after set-up.

import (
	"context"
	"fmt"
	"runtime"

	"github.com/godirect/nd"
)

// reaper takes completions off a completion queue, either by spinning on
// GetResults (polling, the ND tools' default) or by blocking in Notify.
type reaper struct {
	cq       nd.CompletionQueue
	blocking bool
	ctx      context.Context
	done     <-chan struct{} // ctx.Done(), checked while spinning
	results  []*nd.Result
}

// newReaper returns a reaper for cq that hands out up to batch completions at
// a time and gives up when ctx ends.
func newReaper(ctx context.Context, cq nd.CompletionQueue, blocking bool, batch int) *reaper {
	return &reaper{cq: cq, blocking: blocking, ctx: ctx, done: ctx.Done(), results: make([]*nd.Result, batch)}
}

// Spinning yields the processor every yieldEvery empty polls, so that a peer
// in the same process gets to run even with GOMAXPROCS=1, and checks the
// context every checkEvery empty polls.
const (
	yieldEvery = 64
	checkEvery = 4096
)

// next returns at least one completed request. The slice is the reaper's
// own and is valid until the next call.
func (r *reaper) next() ([]*nd.Result, error) {
	for spins := 1; ; spins++ {
		if n := r.cq.GetResults(r.results); n > 0 {
			return r.results[:n], nil
		}
		if r.blocking {
			if err := r.cq.Notify(r.ctx, nd.NotifyAny); err != nil {
				return nil, fmt.Errorf("CompletionQueue.Notify: %w", err)
			}
			continue
		}
		if spins%yieldEvery == 0 {
			runtime.Gosched()
		}
		if spins%checkEvery == 0 {
			select {
			case <-r.done:
				return nil, fmt.Errorf("polling the completion queue: %w", r.ctx.Err())
			default:
			}
		}
	}
}

// splitSGL fills dst with up to n entries that cover buf in equal parts (the
// last one takes the remainder), all in region (nil for inline data), and
// returns the filled part of dst. An empty buf gives an empty list; fewer
// than n entries are used when buf has fewer than n bytes.
func splitSGL(dst []nd.SGE, buf []byte, region nd.MemoryRegion, n int) []nd.SGE {
	n = min(n, len(buf), cap(dst))
	dst = dst[:n]
	for i := range n {
		lo, hi := i*len(buf)/n, (i+1)*len(buf)/n
		dst[i] = nd.SGE{Buffer: buf[lo:hi:hi], Region: region}
	}
	return dst
}

// receiveRing keeps a fixed number of Receives posted on one endpoint, all
// into the same scatter/gather list. Receives complete in post order, so the
// next completion always belongs to the oldest slot. It suits protocols that
// have at most one message in flight towards the endpoint, since every
// Receive lands in the same buffer.
type receiveRing struct {
	ep      nd.Endpoint
	sgl     []nd.SGE
	results []nd.Result
	head    int // the slot whose completion comes next
}

// newReceiveRing posts depth Receives into sgl on ep.
func newReceiveRing(ep nd.Endpoint, sgl []nd.SGE, depth int) (*receiveRing, error) {
	r := &receiveRing{ep: ep, sgl: sgl, results: make([]nd.Result, depth)}
	for i := range r.results {
		if err := ep.Receive(&r.results[i], sgl); err != nil {
			return nil, fmt.Errorf("posting Receive %d of %d: %w", i+1, depth, err)
		}
	}
	return r, nil
}

// owns reports whether res is the Result of the ring's oldest Receive, the
// one that completes next.
func (r *receiveRing) owns(res *nd.Result) bool { return res == &r.results[r.head] }

// complete checks the oldest Receive's completion, reposts it and returns
// the number of bytes it received.
func (r *receiveRing) complete() (int, error) {
	res := &r.results[r.head]
	if err := res.Status.Err(); err != nil {
		return 0, fmt.Errorf("Receive completed with %w", err)
	}
	n := res.BytesTransferred
	if err := r.ep.Receive(res, r.sgl); err != nil {
		return 0, fmt.Errorf("reposting Receive: %w", err)
	}
	r.head++
	if r.head == len(r.results) {
		r.head = 0
	}
	return n, nil
}
