//go:build windows && (amd64 || arm64)

package ndspi

import (
	"context"
	"math"
	"sync"
	"sync/atomic"

	"github.com/godirect/nd"
	"github.com/godirect/nd/internal/ndabi"
	"github.com/godirect/nd/internal/ndrules"
)

// srq is an nd.SharedReceiveQueue over ND v2's IND2SharedReceiveQueue. Its
// Receives carry the queue's table id in their request context, so that a
// completion names them on whichever endpoint's queue it arrives. ND v2's
// queue has no completion queue of its own and no Flush: nd's Flush is
// ErrNotSupported here, and the Receives no endpoint took when the queue
// closes (which ND v2 drops silently) complete ErrCanceled on the queue's
// completion queue, as nd says. Its methods are safe for concurrent use.
type srq struct {
	a      *adapter
	obj    com
	g      guard
	cq     *cq
	limits nd.SharedReceiveQueueLimits
	id     uint32
	qs     queues

	mu     sync.Mutex // Receive
	mem    cmem
	closed atomic.Bool

	eps map[*endpoint]struct{} // its endpoints (under a.mu)
}

var (
	_ nd.SharedReceiveQueue        = (*srq)(nil)
	_ nd.SharedReceiveQueueAdapter = (*adapter)(nil)
)

// CreateSharedReceiveQueue implements nd.SharedReceiveQueueAdapter: ND
// v2's CreateSharedReceiveQueue (the adapter's overlapped file, no
// affinity), whose parameter positions for the limits are nd's. ND v1, and
// an adapter whose MaxSharedReceiveQueueDepth is 0, have none:
// ErrNotSupported.
func (a *adapter) CreateSharedReceiveQueue(x nd.CompletionQueue, limits nd.SharedReceiveQueueLimits) (nd.SharedReceiveQueue, error) {
	if a.closed.Load() {
		return nil, nd.ErrDeviceRemoved
	}
	if a.v1 || a.info.MaxSharedReceiveQueueDepth == 0 {
		return nil, nd.ErrNotSupported
	}
	q, ok := a.cqOf(x)
	if !ok {
		return nil, nd.ErrInvalidParameter1
	}
	s, err := newScratch()
	if err != nil {
		return nil, err
	}
	defer s.free()
	u := func(n int) uintptr {
		if n < 0 {
			return math.MaxUint32
		}
		return uintptr(uint32(min(n, math.MaxUint32)))
	}
	st := a.obj.call(ndabi.IND2AdapterCreateSharedReceiveQueue, guidArg(&ndabi.IIDIND2SharedReceiveQueue), uintptr(a.file),
		u(limits.Entries), u(limits.SGE), u(limits.NotifyThreshold), 0, 0, s.ptr(0))
	if st != nd.Success {
		return nil, st
	}
	r := &srq{a: a, obj: com(s.word(0)), cq: q, limits: limits, eps: map[*endpoint]struct{}{}}
	if r.mem, err = allocC(max(limits.SGE, 1) * sge2Size); err != nil {
		r.obj.release()
		return nil, err
	}
	r.qs.in = newPool(limits.Entries, r)
	id, ok := a.slots.add(&r.qs)
	if !ok {
		r.obj.release()
		r.mem.free()
		return nil, nd.ErrInsufficientResources
	}
	r.id = id
	if !add(a, a.srqs, r) {
		r.obj.release()
		r.mem.free()
		a.slots.remove(id)
		return nil, nd.ErrDeviceRemoved
	}
	return r, nil
}

// srqOf is the queue nd names, if it is an open one of a.
func (a *adapter) srqOf(x nd.SharedReceiveQueue) (*srq, bool) {
	s, ok := x.(*srq)
	if !ok || s == nil || s.a != a || s.closed.Load() {
		return nil, false
	}
	return s, true
}

func (s *srq) status() nd.Status { return s.a.status(true) }

// dead reports whether the queue, its completion queue or its adapter
// closed.
func (s *srq) dead() bool { return s.closed.Load() || s.cq.closed.Load() || s.a.closed.Load() }

// reaped implements reaper.
func (s *srq) reaped() {}

// Receive implements nd.SharedReceiveQueue: ND v2's Receive on the queue.
// It allocates nothing.
func (s *srq) Receive(res *nd.Result, sgl []nd.SGE) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.dead() {
		return s.status()
	}
	total, st := ndrules.Receive(res, sgl, ndrules.PostLimits{MaxSGE: s.limits.SGE, MaxLength: math.MaxInt})
	if st != nd.Success {
		return st
	}
	slot, ok := s.qs.in.take(res, total, false, false)
	if !ok {
		return nd.ErrNoMoreEntries
	}
	for i := range sgl {
		buf := sgl[i].Buffer
		addr := bytesAddr(buf)
		h, ok := s.a.regionOf(sgl[i].Region)
		if !ok {
			addr = s.a.poison.addr()
		}
		putSGE2(s.mem, i, addr, len(buf), h)
	}
	if st := s.obj.call(ndabi.IND2SharedReceiveQueueReceive, uintptr(srqRequestContext(s.id, slot)), s.mem.addr, uintptr(len(sgl))); st != nd.Success {
		s.qs.in.untake(slot)
		return st
	}
	return nil
}

// Notify implements nd.SharedReceiveQueue: ND v2's Notify, overlapped.
func (s *srq) Notify(ctx context.Context) error {
	if s.dead() {
		return s.status()
	}
	rq := request{port: s.a.b.port, g: &s.g, obj: s.obj, op: "Notify", again: true, closed: s.status}
	return rq.do(ctx, func(ov uintptr) nd.Status { return s.obj.call(ndabi.IND2SharedReceiveQueueNotify, ov) })
}

// Flush implements nd.SharedReceiveQueue: ND v2's queue cannot give back
// the Receives it holds without going: ErrNotSupported (Close completes
// them).
func (s *srq) Flush() error {
	if s.dead() {
		return s.status()
	}
	return nd.ErrNotSupported
}

// Close implements nd.SharedReceiveQueue: its endpoints close (the
// Receives they took complete ErrCanceled on their queues), waiting
// Notify calls return ErrCanceled, the queue is released, and the
// Receives no endpoint took complete ErrCanceled, in post order, on the
// queue's completion queue.
func (s *srq) Close() error {
	if s.closed.Swap(true) {
		return nil
	}
	a := s.a
	a.mu.Lock()
	eps := make([]*endpoint, 0, len(s.eps))
	for e := range s.eps {
		eps = append(eps, e)
	}
	a.mu.Unlock()
	for _, e := range eps {
		e.Close()
	}
	s.mu.Lock()
	s.g.close(s.obj)
	s.obj.release()
	s.mem.free()
	s.mu.Unlock()
	// Completions of Receives that endpoints took are on their queues:
	// take them from the provider first, so that what is left is what no
	// endpoint took.
	for _, q := range snapshot(a, a.cqs) {
		q.mu.Lock()
		q.drain(0)
		q.mu.Unlock()
	}
	slots := s.qs.in.abandon()
	s.cq.mu.Lock()
	for _, slot := range slots {
		res := s.qs.in.result(slot)
		res.Status, res.Cause, res.BytesTransferred = nd.ErrCanceled, nd.CauseNone, 0
		s.cq.back.push(backlogItem{res: res, pool: s.qs.in, slot: slot})
	}
	s.cq.mu.Unlock()
	remove(a, a.srqs, s)
	return nil
}
