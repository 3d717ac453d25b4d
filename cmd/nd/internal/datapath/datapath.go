package datapath

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

// Reaper takes completions off a completion queue, either by spinning on
// GetResults (polling, the ND tools' default) or, with nd.Waiter, by
// blocking in Notify, or by spinning for at most spin and then blocking.
type Reaper struct {
	cq       nd.CompletionQueue
	blocking bool
	// Spin, if not 0, is how long a polling reaper spins without a
	// completion before it blocks in Notify until the next one: a peer that
	// lost its processor to other work gets it back sooner when this side
	// sleeps.
	Spin    time.Duration
	ctx     context.Context
	results []*nd.Result
}

// NewReaper returns a reaper for cq that hands out up to batch completions at
// a time and gives up when ctx ends.
func NewReaper(ctx context.Context, cq nd.CompletionQueue, blocking bool, batch int) *Reaper {
	return &Reaper{cq: cq, blocking: blocking, ctx: ctx, results: make([]*nd.Result, batch)}
}

// Polling loops give the processor away now and then, so that the other
// goroutines of the process run even with GOMAXPROCS=1 (a peer in the same
// process, a provider's reader goroutine): once per yieldPeriod of
// spinning, which a clock read every pollsPerClock empty polls tells (a
// yield is a trip through the scheduler: yielding every few polls made
// shm's send_lat a fifth slower). Loops that spin on memory look at the
// completion queue, and count an empty poll, every YieldEvery spins: a
// clock read every few spins of a few nanoseconds would keep the loop in
// the clock most of the time, late to see the byte it waits for. All look
// at the context every CheckEvery.
const (
	yieldPeriod   = 2 * time.Microsecond
	pollsPerClock = 4
	YieldEvery    = 16
	CheckEvery    = 4096
)

// Pacer yields a polling loop's processor once per yieldPeriod. The zero
// value is ready; one per loop.
type Pacer struct {
	polls int
	since time.Duration // monotonic time of the last yield (or first look)
}

// processStart is the origin of pacer's monotonic clock.
var processStart = time.Now()

// Idle counts one empty poll and yields if yieldPeriod passed since the
// loop last yielded.
func (p *Pacer) Idle() {
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

// SendWhenRoom posts a Send of sgl with res and flags, and while the
// endpoint's queue is full (silent Sends the peer has not acknowledged yet)
// calls poll, which takes what completes and moves the acknowledgments,
// until the Send fits, poll fails, or ctx ends.
func SendWhenRoom(ctx context.Context, ep nd.Endpoint, res *nd.Result, sgl []nd.SGE, flags nd.Flags, poll func() error) error {
	var pace Pacer
	for spins := 1; ; spins++ {
		err := ep.Send(res, sgl, flags)
		if !errors.Is(err, nd.ErrNoMoreEntries) {
			return err
		}
		if err := poll(); err != nil {
			return err
		}
		pace.Idle()
		if spins%CheckEvery == 0 {
			if err := ctx.Err(); err != nil {
				return fmt.Errorf("waiting for room in the send queue: %w", err)
			}
		}
	}
}

// Next returns at least one completed request. The slice is the reaper's
// own and is valid until the next call.
//
// A reaper that only polls (the latency tests' default) spins in a loop
// of its own, the shortest path from an empty poll to the next, which the
// latency tests measure; the other modes wait with nd.Waiter.
func (r *Reaper) Next() ([]*nd.Result, error) {
	if !r.blocking && r.Spin <= 0 {
		return r.poll()
	}
	w := nd.Waiter{Spin: r.Spin}
	if r.blocking {
		w.Spin = 0
	}
	n, err := w.WaitResults(r.ctx, r.cq, r.results)
	if err != nil {
		return nil, fmt.Errorf("waiting for completions: %w", err)
	}
	return r.results[:n], nil
}

// poll spins on GetResults until it returns a completion or ctx ends.
func (r *Reaper) poll() ([]*nd.Result, error) {
	var p Pacer
	for spins := 1; ; spins++ {
		if n := r.cq.GetResults(r.results); n > 0 {
			return r.results[:n], nil
		}
		p.Idle()
		if spins%CheckEvery == 0 {
			if err := r.ctx.Err(); err != nil {
				return nil, fmt.Errorf("polling the completion queue: %w", err)
			}
		}
	}
}

// SendSGL is SplitSGL for a Send of buf from region: inline (region nil)
// when buf is at most inline bytes, the endpoint's MaxInlineData.
func SendSGL(dst []nd.SGE, buf []byte, region nd.MemoryRegion, n, inline int) []nd.SGE {
	if len(buf) <= inline {
		region = nil
	}
	return SplitSGL(dst, buf, region, n)
}

// SplitSGL fills dst with up to n entries that cover buf in equal parts (the
// last one takes the remainder), all in region (nil for inline data), and
// returns the filled part of dst. An empty buf gives an empty list; fewer
// than n entries are used when buf has fewer than n bytes.
func SplitSGL(dst []nd.SGE, buf []byte, region nd.MemoryRegion, n int) []nd.SGE {
	n = min(n, len(buf), cap(dst))
	dst = dst[:n]
	for i := range n {
		lo, hi := i*len(buf)/n, (i+1)*len(buf)/n
		dst[i] = nd.SGE{Buffer: buf[lo:hi:hi], Region: region}
	}
	return dst
}

// ReceiveRing keeps a fixed number of Receives posted on one endpoint.
// Receives complete in post order, so the next completion always belongs to
// the oldest slot. Made by NewReceiveRing, every Receive lands in the same
// scatter/gather list, which suits protocols that have at most one message
// in flight towards the endpoint or that ignore the bytes; made by
// NewReceiveSlots, each slot has a buffer of its own.
type ReceiveRing struct {
	ep      Receiver
	sgls    [][]nd.SGE // each slot's scatter/gather list
	Results []nd.Result
	head    int // the slot whose completion comes next
	owed    int // Receives taken and not yet reposted (take)
}

// Receiver is what Receives are posted to: an endpoint, or the shared
// receive queue of one endpoint (so that they still complete in post
// order).
type Receiver interface {
	Receive(res *nd.Result, sgl []nd.SGE) error
}

// NewReceiveRing posts depth Receives into sgl on ep.
func NewReceiveRing(ep Receiver, sgl []nd.SGE, depth int) (*ReceiveRing, error) {
	sgls := make([][]nd.SGE, depth)
	for i := range sgls {
		sgls[i] = sgl
	}
	return postReceives(ep, sgls)
}

// NewReceiveSlots posts depth Receives on ep, each into its own part of buf
// (in region), of len(buf)/depth bytes.
func NewReceiveSlots(ep Receiver, buf []byte, region nd.MemoryRegion, depth int) (*ReceiveRing, error) {
	sgls := make([][]nd.SGE, depth)
	size := len(buf) / depth
	for i := range sgls {
		sgls[i] = []nd.SGE{{Buffer: buf[i*size : (i+1)*size], Region: region}}
	}
	return postReceives(ep, sgls)
}

// postReceives posts a Receive into each of sgls.
func postReceives(ep Receiver, sgls [][]nd.SGE) (*ReceiveRing, error) {
	r := &ReceiveRing{ep: ep, sgls: sgls, Results: make([]nd.Result, len(sgls))}
	for i := range r.Results {
		if err := ep.Receive(&r.Results[i], sgls[i]); err != nil {
			return nil, fmt.Errorf("posting Receive %d of %d: %w", i+1, len(sgls), err)
		}
	}
	return r, nil
}

// Owns reports whether res is the Result of the ring's oldest Receive, the
// one that completes next.
func (r *ReceiveRing) Owns(res *nd.Result) bool { return res == &r.Results[r.head] }

// Complete checks the oldest Receive's completion, copies what it received
// into dst (as much as fits; dst may be nil), reposts it and returns the
// number of bytes it received.
func (r *ReceiveRing) Complete(dst []byte) (int, error) {
	n, err := r.Take(dst)
	if err != nil {
		return 0, err
	}
	return n, r.Repost()
}

// Take is complete without the repost: the Receive is owed until repost,
// for a caller that answers first (it must know that enough other Receives
// stay posted meanwhile).
func (r *ReceiveRing) Take(dst []byte) (int, error) {
	res := &r.Results[r.head]
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
	if r.head == len(r.Results) {
		r.head = 0
	}
	return n, nil
}

// Repost posts again the Receives taken since the last repost, in order.
func (r *ReceiveRing) Repost() error {
	for ; r.owed > 0; r.owed-- {
		i := r.head - r.owed
		if i < 0 {
			i += len(r.Results)
		}
		if err := r.ep.Receive(&r.Results[i], r.sgls[i]); err != nil {
			return fmt.Errorf("reposting Receive: %w", err)
		}
	}
	return nil
}

// RequestRing is a ring of Results for the outbound requests of one
// endpoint, which complete in post order: the oldest one in flight always
// completes next.
type RequestRing struct {
	Results []nd.Result
	head    int // the oldest request in flight
	Pending int // requests in flight
}

// NewRequestRing returns a ring for up to n requests in flight.
func NewRequestRing(n int) *RequestRing { return &RequestRing{Results: make([]nd.Result, n)} }

// Full reports whether n requests are in flight.
func (r *RequestRing) Full() bool { return r.Pending == len(r.Results) }

// Next returns the Result for the next request; post with it, then call
// posted. The ring must not be full.
func (r *RequestRing) Next() *nd.Result { return &r.Results[r.Slot()] }

// Slot is the index of next's Result, for callers that keep a buffer per
// request in flight.
func (r *RequestRing) Slot() int {
	i := r.head + r.Pending
	if i >= len(r.Results) {
		i -= len(r.Results)
	}
	return i
}

// Posted counts the request posted with next's Result as in flight.
func (r *RequestRing) Posted() { r.Pending++ }

// Owns reports whether res is the Result of the oldest request in flight,
// the one that completes next.
func (r *RequestRing) Owns(res *nd.Result) bool { return r.Pending > 0 && res == &r.Results[r.head] }

// Complete checks the oldest request's completion and frees its slot.
func (r *RequestRing) Complete() error {
	res := &r.Results[r.head]
	r.Pending--
	if r.head++; r.head == len(r.Results) {
		r.head = 0
	}
	return res.Status.Err()
}

// WaitAll reaps completions until every one of want has completed, each
// with success. Any other completion is an error: the caller waits for
// everything it has in flight.
func (r *Reaper) WaitAll(want ...*nd.Result) error {
	left := len(want)
	for left > 0 {
		done, err := r.Next()
		if err != nil {
			return err
		}
		for _, res := range done {
			i := slices.Index(want, res)
			if i < 0 {
				if err := res.Status.Err(); err != nil {
					return fmt.Errorf("a request completed with %w", err)
				}
				return ErrUnexpected
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

// ErrUnexpected reports a completion that belongs to no request in flight.
var ErrUnexpected = errors.New("a completion for no request in flight")

// Poll returns the completions available now, without waiting. The slice
// is the reaper's own and is valid until the next call.
func (r *Reaper) Poll() []*nd.Result { return r.results[:r.cq.GetResults(r.results)] }
