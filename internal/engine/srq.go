package engine

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/godirect/nd"
	"github.com/godirect/nd/internal/ndrules"
)

// MaxSharedReceiveQueueDepth is the deepest shared receive queue the engine
// serves, for the AdapterInfo of the transports built on it: its Receives
// live in the engine, as an endpoint's do, so no transport limits it
// further.
const MaxSharedReceiveQueueDepth = 1 << 16

// SRQ is a shared receive queue (nd.SharedReceiveQueue). Its methods are
// safe for concurrent use.
//
// Its Receives live in a fixed array of work requests: a free list of
// unused ones and a ring of posted ones (oldest first). An inbound Send on
// an endpoint that uses the queue takes the oldest posted Receive
// (take, under the endpoint's lock and then the queue's) and links it at
// the tail of the endpoint's own list of taken Receives, which the endpoint
// retires to its inbound completion queue in the order it took them, and
// then gives back to the free list. A Receive occupies an entry
// (outstanding) from its post until its completion is reaped, as an
// endpoint's own do.
//
// Lock order: Endpoint.mu, then SRQ.mu, then CQ.mu.
type SRQ struct {
	a      *Adapter
	cq     *CQ // completes the Receives no endpoint took (Flush, Close)
	limits nd.SharedReceiveQueueLimits

	mu     sync.Mutex
	wrs    []WorkRequest
	free   []*WorkRequest // unused entries of wrs (a stack)
	posted []*WorkRequest // ring of posted Receives not yet taken
	head   int            // oldest posted Receive in posted
	n      int            // posted Receives not yet taken
	seq    uint64         // Seq of the next Receive
	// fired is closed, and cleared, when the posted Receives drop below
	// the threshold (or the queue closes) while Notify calls wait on it.
	fired     chan struct{}
	closed    bool
	endpoints []*Endpoint

	// outstanding counts Receives posted (under mu) and not yet reaped.
	outstanding slotCount
	// shut mirrors closed for the endpoints' checks without mu.
	shut atomic.Bool
}

var _ nd.SharedReceiveQueue = (*SRQ)(nil)

// CreateSharedReceiveQueue implements nd.SharedReceiveQueueAdapter.
func (a *Adapter) CreateSharedReceiveQueue(cq nd.CompletionQueue, limits nd.SharedReceiveQueueLimits) (nd.SharedReceiveQueue, error) {
	q, _ := cq.(*CQ)
	cqOK := q != nil && q.a == a && !q.shut.Load()
	if err := ndrules.CreateSharedReceiveQueue(a.closed.Load(), &a.info, cqOK, &limits); err != nil {
		return nil, err
	}
	s := &SRQ{a: a, cq: q, limits: limits}
	s.wrs = make([]WorkRequest, limits.Entries)
	s.free = make([]*WorkRequest, limits.Entries)
	s.posted = make([]*WorkRequest, limits.Entries)
	sges := make([]nd.SGE, limits.Entries*limits.SGE)
	for i := range s.wrs {
		s.wrs[i].sge = sges[i*limits.SGE : i*limits.SGE : (i+1)*limits.SGE]
		s.free[i] = &s.wrs[len(s.wrs)-1-i]
	}
	if !q.attachSRQ(s) {
		return nil, ndrules.Arg("CreateSharedReceiveQueue", "cq", nd.ErrInvalidParameter1, ndrules.NotOpenQueue)
	}
	a.mu.Lock()
	if a.closed.Load() { // Close took its list already
		a.mu.Unlock()
		q.detachSRQ(s)
		return nil, nd.ErrDeviceRemoved
	}
	a.srqs[s] = struct{}{}
	a.mu.Unlock()
	return s, nil
}

// usable is the status of a call on the queue: closedStatus, or Success.
func (s *SRQ) usable() nd.Status { return s.a.closedStatus(s.isClosed()) }

// isClosed reports whether the queue or its completion queue closed.
func (s *SRQ) isClosed() bool { return s.shut.Load() || s.cq.shut.Load() }

// Receive implements nd.SharedReceiveQueue.
func (s *SRQ) Receive(res *nd.Result, sgl []nd.SGE) error {
	if st := s.usable(); st != nd.Success {
		return st
	}
	total, st := ndrules.Receive(res, sgl, ndrules.PostLimits{MaxSGE: s.limits.SGE, MaxLength: s.a.info.MaxInboundLength})
	if st != nd.Success {
		return st
	}
	s.mu.Lock()
	if st := s.a.closedStatus(s.closed || s.isClosed()); st != nd.Success {
		s.mu.Unlock()
		return st
	}
	if s.outstanding.inUse() >= s.limits.Entries || len(s.free) == 0 {
		s.mu.Unlock()
		return nd.ErrNoMoreEntries
	}
	wr := s.free[len(s.free)-1]
	s.free = s.free[:len(s.free)-1]
	wr.reset(OpReceive, 0, s.seq, res)
	wr.Length = total
	s.seq++
	wr.setReceiveSGL(s.a, sgl)
	s.outstanding.posted++
	s.posted[(s.head+s.n)%len(s.posted)] = wr
	s.n++
	s.mu.Unlock()
	return nil
}

// take removes the oldest posted Receive for an endpoint's inbound Send, or
// returns nil when none is posted. It fires the low-water mark when the
// posted Receives drop below it.
func (s *SRQ) take() *WorkRequest {
	s.mu.Lock()
	if s.n == 0 {
		s.mu.Unlock()
		return nil
	}
	wr := s.posted[s.head]
	s.posted[s.head] = nil
	s.head = (s.head + 1) % len(s.posted)
	s.n--
	if s.fired != nil && s.n < s.limits.NotifyThreshold {
		close(s.fired)
		s.fired = nil
	}
	s.mu.Unlock()
	return wr
}

// release gives back the entry of a Receive that its endpoint retired.
func (s *SRQ) release(wr *WorkRequest) {
	s.mu.Lock()
	s.free = append(s.free, wr)
	s.mu.Unlock()
}

// Notify implements nd.SharedReceiveQueue.
func (s *SRQ) Notify(ctx context.Context) error {
	if st := s.usable(); st != nd.Success {
		return st
	}
	pr := s.a.progress
	if pr != nil {
		pr.Poll() // what has arrived already counts
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return &nd.OpError{Op: "Notify", Status: nd.ErrCanceled}
	}
	if s.n < s.limits.NotifyThreshold {
		s.mu.Unlock()
		return nil
	}
	if s.fired == nil {
		s.fired = make(chan struct{})
	}
	ch := s.fired
	s.mu.Unlock()
	// Inbound Sends must move while this goroutine waits.
	if pr != nil {
		pr.Watch()
		defer pr.Unwatch()
	}
	select {
	case <-ch:
	case <-ctx.Done():
		s.mu.Lock()
		fired := s.fired != ch
		s.mu.Unlock()
		if !fired {
			return canceled("Notify", ctx.Err())
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return &nd.OpError{Op: "Notify", Status: nd.ErrCanceled}
	}
	return nil
}

// Flush implements nd.SharedReceiveQueue.
func (s *SRQ) Flush() error {
	if st := s.usable(); st != nd.Success {
		return st
	}
	s.mu.Lock()
	s.flushLocked()
	s.mu.Unlock()
	return nil
}

// flushLocked completes every posted Receive not yet taken with
// ErrCanceled on the queue's completion queue, in post order; the posted
// Receives dropping below the threshold fires the low-water mark.
func (s *SRQ) flushLocked() {
	if s.fired != nil && s.limits.NotifyThreshold > 0 {
		close(s.fired)
		s.fired = nil
	}
	for s.n > 0 {
		wr := s.posted[s.head]
		s.posted[s.head] = nil
		s.head = (s.head + 1) % len(s.posted)
		s.n--
		res := wr.result
		res.Status, res.Cause, res.BytesTransferred = nd.ErrCanceled, nd.CauseNone, 0
		s.cq.push(res, &s.outstanding, false)
		wr.result, wr.SGL = nil, nil
		clear(wr.sge) // the entries setReceiveSGL filled
		s.free = append(s.free, wr)
	}
}

// Close implements nd.SharedReceiveQueue.
func (s *SRQ) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.shut.Store(true)
	s.a.closes.Add(1)
	if s.fired != nil {
		close(s.fired)
		s.fired = nil
	}
	s.flushLocked()
	eps := slices.Clone(s.endpoints)
	s.mu.Unlock()
	for _, ep := range eps {
		ep.close(nd.ErrCanceled)
	}
	s.cq.detachSRQ(s)
	s.a.mu.Lock()
	delete(s.a.srqs, s)
	s.a.mu.Unlock()
	return nil
}

// attach adds ep to the endpoints that use the queue; it reports false if
// the queue is closed.
func (s *SRQ) attach(ep *Endpoint) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed || s.isClosed() {
		return false
	}
	s.endpoints = append(s.endpoints, ep)
	return true
}

func (s *SRQ) detach(ep *Endpoint) {
	s.mu.Lock()
	s.endpoints = remove(s.endpoints, ep)
	s.mu.Unlock()
}

// takeSharedLocked is takeReceiveLocked's step for an endpoint on a shared
// receive queue: the oldest posted Receive, linked at the tail of the
// endpoint's taken list, or nil when the queue is empty.
func (ep *Endpoint) takeSharedLocked() *WorkRequest {
	wr := ep.srq.take()
	if wr == nil {
		return nil
	}
	wr.nextTaken = nil
	if ep.takenTail == nil {
		ep.taken = wr
	} else {
		ep.takenTail.nextTaken = wr
	}
	ep.takenTail = wr
	return wr
}

// retireSharedLocked moves the finished Receives at the head of the
// endpoint's taken list to its inbound completion queue, in the order it
// took them, and gives their entries back to the shared queue.
func (ep *Endpoint) retireSharedLocked() {
	for ep.taken != nil && ep.taken.done {
		wr := ep.taken
		ep.taken = wr.nextTaken
		if ep.taken == nil {
			ep.takenTail = nil
		}
		res, solicited := wr.result, wr.solicited
		res.Status, res.Cause = wr.status, wr.cause
		res.BytesTransferred = wr.Length
		if wr.status != nd.Success {
			res.BytesTransferred = 0
		}
		// The entry goes back before the completion is queued: once it
		// is reaped, a new Receive may need the entry.
		wr.result, wr.SGL, wr.nextTaken = nil, nil, nil
		clear(wr.sge) // the entries setReceiveSGL filled
		ep.srq.release(wr)
		if ep.onSharedReceive != nil {
			ep.onSharedReceive(res)
		}
		ep.inCQ.push(res, &ep.srq.outstanding, solicited)
	}
}
