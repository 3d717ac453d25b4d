package ndexport

import (
	"context"
	"sync"

	"github.com/godirect/nd"
	"github.com/godirect/nd/internal/engine"
	"github.com/godirect/nd/internal/ndabi"
)

// SRQ2 is ND v2's IND2SharedReceiveQueue. ND v2's queue has no completion
// queue of its own: Receives that no queue pair took when it goes complete
// on a private one, which nobody reads.
type SRQ2 struct {
	Base
	ad      *Adapter2
	file    File
	flushCQ nd.CompletionQueue
	srq     *engine.SRQ
	slots   freeSlots

	mu  sync.Mutex
	sgl []nd.SGE
}

// CreateSharedReceiveQueue is IND2Adapter::CreateSharedReceiveQueue: depth
// 1 to MaxSharedReceiveQueueDepth (ND_INVALID_PARAMETER_3), maxSge up to
// MaxReceiveSge (ND_INVALID_PARAMETER_4), threshold up to depth
// (ND_INVALID_PARAMETER_5); group and affinity are hints, not used.
func (ad *Adapter2) CreateSharedReceiveQueue(iid ndabi.GUID, h uintptr, depth, maxSge, threshold uint32) (*SRQ2, nd.Status) {
	f, st := ad.created(iid, ndabi.IIDIND2SharedReceiveQueue, h, nd.ErrInvalidParameter2)
	if st != nd.Success {
		return nil, st
	}
	switch {
	case depth == 0 || uint64(depth) > uint64(ad.info.MaxSharedReceiveQueueDepth):
		return nil, nd.ErrInvalidParameter3
	case uint64(maxSge) > uint64(ad.info.MaxInboundSGE):
		return nil, nd.ErrInvalidParameter4
	case threshold > depth:
		return nil, nd.ErrInvalidParameter5
	}
	cq, err := ad.a.CreateCompletionQueue(int(depth))
	if err != nil {
		return nil, status(err)
	}
	q, err := nd.CreateSharedReceiveQueue(ad.a, cq, nd.SharedReceiveQueueLimits{Entries: int(depth), SGE: int(maxSge), NotifyThreshold: int(threshold)})
	if err != nil {
		cq.Close()
		return nil, status(err)
	}
	s := &SRQ2{ad: ad, file: f, flushCQ: cq, srq: q.(*engine.SRQ), sgl: make([]nd.SGE, maxSge)}
	s.slots.grow(int(depth))
	s.init(s)
	ad.hold()
	return s, nd.Success
}

func (s *SRQ2) released() {}
func (s *SRQ2) finalize() {
	s.srq.Close()
	s.flushCQ.Close()
	s.ad.unhold()
}

// Modify is IND2SharedReceiveQueue::Modify: depth and threshold (0 leaves
// either as it is).
func (s *SRQ2) Modify(depth, threshold uint32) nd.Status {
	if err := s.srq.Modify(int(min(uint64(depth), 1<<31)), int(min(uint64(threshold), 1<<31))); err != nil {
		return status(err)
	}
	s.slots.grow(int(depth))
	return nd.Success
}

// Notify is IND2SharedReceiveQueue::Notify: the request completes when the
// Receives waiting drop below the threshold.
func (s *SRQ2) Notify(ov *ndabi.Overlapped) nd.Status {
	if ov == nil {
		return nd.ErrInvalidParameter1
	}
	return s.start(s.file, ov, nd.ErrInvalidParameter1, func(ctx context.Context) nd.Status {
		return status(s.srq.Notify(ctx))
	})
}

// Receive is IND2SharedReceiveQueue::Receive: it completes on the receive
// completion queue of the queue pair whose Send takes it, with that queue
// pair's context.
func (s *SRQ2) Receive(ctx uintptr, p *ndabi.SGE2, n uint32) nd.Status {
	r := s.slots.take()
	if r == nil {
		return nd.ErrNoMoreEntries
	}
	s.mu.Lock()
	sgl, st := sgl2(s.ad, s.sgl, p, n, s.ad.info.MaxInboundLength, false)
	if st == nd.Success {
		r.ctx, r.qp, r.res = ctx, nil, nd.Result{}
		st = status(s.srq.Receive(&r.res, sgl))
		clear(sgl)
	}
	s.mu.Unlock()
	if st != nd.Success {
		s.slots.reaped(r)
	}
	return st
}
