package main

// Data-path helpers shared by the data tests: reaping completions by polling
// or blocking, scatter/gather lists over a buffer, and a ring of Receives
// that are kept posted. None of them allocates after set-up.

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"time"

	"github.com/godirect/nd"
)

// reaper takes completions off a completion queue, either by spinning on
// GetResults (polling, the ND tools' default) or by blocking in Notify, or
// by spinning for at most spin and then blocking.
type reaper struct {
	cq       nd.CompletionQueue
	blocking bool
	// spin, if not 0, is how long a polling reaper spins without a
	// completion before it blocks in Notify until the next one: a peer that
	// lost its processor to other work gets it back sooner when this side
	// sleeps.
	spin    time.Duration
	ctx     context.Context
	done    <-chan struct{} // ctx.Done(), checked while spinning
	results []*nd.Result
}

// newReaper returns a reaper for cq that hands out up to batch completions at
// a time and gives up when ctx ends.
func newReaper(ctx context.Context, cq nd.CompletionQueue, blocking bool, batch int) *reaper {
	return &reaper{cq: cq, blocking: blocking, ctx: ctx, done: ctx.Done(), results: make([]*nd.Result, batch)}
}

// Polling loops give the processor away now and then, so that the other
// goroutines of the process run even with GOMAXPROCS=1 (a peer in the same
// process, a provider's reader goroutine): once per yieldPeriod of
// spinning, which a clock read every pollsPerClock empty polls tells (a
// yield is a trip through the scheduler: yielding every few polls made
// shm's send_lat a fifth slower). Loops that spin on memory look at the
// completion queue every yieldEvery spins; all look at the context every
// checkEvery.
const (
	yieldPeriod   = 2 * time.Microsecond
	pollsPerClock = 4
	yieldEvery    = 16
	checkEvery    = 4096
)

// pacer yields a polling loop's processor once per yieldPeriod. The zero
// value is ready; one per loop.
type pacer struct {
	polls int
	since time.Duration // monotonic time of the last yield (or first look)
	first time.Duration // monotonic time of the first empty poll (spunFor)
}

// processStart is the origin of pacer's monotonic clock.
var processStart = time.Now()

// idle counts one empty poll and yields if yieldPeriod passed since the
// loop last yielded.
func (p *pacer) idle() {
	if p.polls++; p.polls%pollsPerClock != 0 {
		return
	}
	now := time.Since(processStart)
	switch {
	case p.since == 0:
		p.since = now
	case now-p.since >= yieldPeriod:
		runtime.Gosched()
		p.since = time.Since(processStart)
	}
}

// spunFor reports whether the loop has spun for d since its first empty
// poll. Call it before idle: it reads the clock every pollsPerClock polls.
func (p *pacer) spunFor(d time.Duration) bool {
	if p.polls%pollsPerClock != 0 {
		return false
	}
	now := time.Since(processStart)
	if p.first == 0 {
		p.first = now
		return false
	}
	return now-p.first >= d
}

// sendWhenRoom posts a Send of sgl with res and flags, and while the
// endpoint's queue is full (silent Sends the peer has not acknowledged yet)
// calls poll, which takes what completes and moves the acknowledgments,
// until the Send fits, poll fails, or ctx ends.
func sendWhenRoom(ctx context.Context, ep nd.Endpoint, res *nd.Result, sgl []nd.SGE, flags nd.Flags, poll func() error) error {
	var pace pacer
	for spins := 1; ; spins++ {
		err := ep.Send(res, sgl, flags)
		if !errors.Is(err, nd.ErrNoMoreEntries) {
			return err
		}
		if err := poll(); err != nil {
			return err
		}
		pace.idle()
		if spins%checkEvery == 0 {
			if err := ctx.Err(); err != nil {
				return fmt.Errorf("waiting for room in the send queue: %w", err)
			}
		}
	}
}

// next returns at least one completed request. The slice is the reaper's
// own and is valid until the next call.
func (r *reaper) next() ([]*nd.Result, error) {
	var p pacer
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
		if r.spin > 0 && p.spunFor(r.spin) {
			if err := r.cq.Notify(r.ctx, nd.NotifyAny); err != nil {
				return nil, fmt.Errorf("CompletionQueue.Notify: %w", err)
			}
			p = pacer{}
			continue
		}
		p.idle()
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

// receiveRing keeps a fixed number of Receives posted on one endpoint.
// Receives complete in post order, so the next completion always belongs to
// the oldest slot. Made by newReceiveRing, every Receive lands in the same
// scatter/gather list, which suits protocols that have at most one message
// in flight towards the endpoint or that ignore the bytes; made by
// newReceiveSlots, each slot has a buffer of its own.
type receiveRing struct {
	ep      receiver
	sgls    [][]nd.SGE // each slot's scatter/gather list
	results []nd.Result
	head    int // the slot whose completion comes next
	owed    int // Receives taken and not yet reposted (take)
}

// receiver is what Receives are posted to: an endpoint, or the shared
// receive queue of one endpoint (so that they still complete in post
// order).
type receiver interface {
	Receive(res *nd.Result, sgl []nd.SGE) error
}

// newReceiveRing posts depth Receives into sgl on ep.
func newReceiveRing(ep receiver, sgl []nd.SGE, depth int) (*receiveRing, error) {
	sgls := make([][]nd.SGE, depth)
	for i := range sgls {
		sgls[i] = sgl
	}
	return postReceives(ep, sgls)
}

// newReceiveSlots posts depth Receives on ep, each into its own part of buf
// (in region), of len(buf)/depth bytes.
func newReceiveSlots(ep receiver, buf []byte, region nd.MemoryRegion, depth int) (*receiveRing, error) {
	sgls := make([][]nd.SGE, depth)
	size := len(buf) / depth
	for i := range sgls {
		sgls[i] = []nd.SGE{{Buffer: buf[i*size : (i+1)*size], Region: region}}
	}
	return postReceives(ep, sgls)
}

// postReceives posts a Receive into each of sgls.
func postReceives(ep receiver, sgls [][]nd.SGE) (*receiveRing, error) {
	r := &receiveRing{ep: ep, sgls: sgls, results: make([]nd.Result, len(sgls))}
	for i := range r.results {
		if err := ep.Receive(&r.results[i], sgls[i]); err != nil {
			return nil, fmt.Errorf("posting Receive %d of %d: %w", i+1, len(sgls), err)
		}
	}
	return r, nil
}

// owns reports whether res is the Result of the ring's oldest Receive, the
// one that completes next.
func (r *receiveRing) owns(res *nd.Result) bool { return res == &r.results[r.head] }

// complete checks the oldest Receive's completion, copies what it received
// into dst (as much as fits; dst may be nil), reposts it and returns the
// number of bytes it received.
func (r *receiveRing) complete(dst []byte) (int, error) {
	n, err := r.take(dst)
	if err != nil {
		return 0, err
	}
	return n, r.repost()
}

// take is complete without the repost: the Receive is owed until repost,
// for a caller that answers first (it must know that enough other Receives
// stay posted meanwhile).
func (r *receiveRing) take(dst []byte) (int, error) {
	res := &r.results[r.head]
	if err := res.Status.Err(); err != nil {
		return 0, fmt.Errorf("a Receive completed with %w", err)
	}
	n := res.BytesTransferred
	left := min(n, len(dst))
	for _, sge := range r.sgls[r.head] {
		if left == 0 {
			break
		}
		c := copy(dst[:left], sge.Buffer)
		dst, left = dst[c:], left-c
	}
	r.owed++
	r.head++
	if r.head == len(r.results) {
		r.head = 0
	}
	return n, nil
}

// repost posts again the Receives taken since the last repost, in order.
func (r *receiveRing) repost() error {
	for ; r.owed > 0; r.owed-- {
		i := r.head - r.owed
		if i < 0 {
			i += len(r.results)
		}
		if err := r.ep.Receive(&r.results[i], r.sgls[i]); err != nil {
			return fmt.Errorf("reposting Receive: %w", err)
		}
	}
	return nil
}

// requestRing is a ring of Results for the outbound requests of one
// endpoint, which complete in post order: the oldest one in flight always
// completes next.
type requestRing struct {
	results []nd.Result
	head    int // the oldest request in flight
	pending int // requests in flight
}

// newRequestRing returns a ring for up to n requests in flight.
func newRequestRing(n int) *requestRing { return &requestRing{results: make([]nd.Result, n)} }

// full reports whether n requests are in flight.
func (r *requestRing) full() bool { return r.pending == len(r.results) }

// next returns the Result for the next request; post with it, then call
// posted. The ring must not be full.
func (r *requestRing) next() *nd.Result { return &r.results[r.slot()] }

// slot is the index of next's Result, for callers that keep a buffer per
// request in flight.
func (r *requestRing) slot() int {
	i := r.head + r.pending
	if i >= len(r.results) {
		i -= len(r.results)
	}
	return i
}

// posted counts the request posted with next's Result as in flight.
func (r *requestRing) posted() { r.pending++ }

// owns reports whether res is the Result of the oldest request in flight,
// the one that completes next.
func (r *requestRing) owns(res *nd.Result) bool { return r.pending > 0 && res == &r.results[r.head] }

// complete checks the oldest request's completion and frees its slot.
func (r *requestRing) complete() error {
	res := &r.results[r.head]
	r.pending--
	if r.head++; r.head == len(r.results) {
		r.head = 0
	}
	return res.Status.Err()
}

// waitAll reaps completions until every one of want has completed, each
// with success. Any other completion is an error: the caller waits for
// everything it has in flight.
func (r *reaper) waitAll(want ...*nd.Result) error {
	left := len(want)
	for left > 0 {
		done, err := r.next()
		if err != nil {
			return err
		}
		for _, res := range done {
			i := slices.Index(want, res)
			if i < 0 {
				if err := res.Status.Err(); err != nil {
					return fmt.Errorf("a request completed with %w", err)
				}
				return errUnexpected
			}
			if err := res.Status.Err(); err != nil {
				return err
			}
			want[i] = nil
			left--
		}
	}
	return nil
}

// errUnexpected reports a completion that belongs to no request in flight.
var errUnexpected = errors.New("a completion for no request in flight")

// poll returns the completions available now, without waiting. The slice
// is the reaper's own and is valid until the next call.
func (r *reaper) poll() []*nd.Result { return r.results[:r.cq.GetResults(r.results)] }
