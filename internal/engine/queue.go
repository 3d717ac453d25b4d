package engine

import (
	"sync/atomic"

	"github.com/godirect/nd"
)

// Op is the kind of a work request.
type Op uint8

// The work request kinds.
const (
	OpSend Op = iota + 1
	OpSendInvalidate
	OpRead
	OpWrite
	OpBind
	OpInvalidate
	OpReceive
)

// WorkRequest is one posted request as the engine hands it to a transport.
// From Transmit (or TakeReceive) on, the transport owns the request: the
// engine neither flushes nor reuses it until the transport completes it
// (CompleteOutbound, CompleteReceive), which it must do exactly once, also
// when the link closes. The transport may read the exported fields until
// then and must not keep the pointer afterwards (slots are reused).
type WorkRequest struct {
	Op     Op
	cause  nd.Cause // more about a failed status (finishLocked); in Op's padding
	Flags  nd.Flags
	SGL    []nd.SGE // local memory, validated; inline entries point into a private copy
	Length int      // bytes: total of SGL (a Receive's capacity until it completes)
	Remote nd.MWDescriptor
	Offset uint64
	Seq    uint64 // identifies the request while it is outstanding

	result    *nd.Result
	status    nd.Status
	preset    bool // status was decided when posting; report it when processed
	done      bool
	counted   bool // counted in readsInFlight
	solicited bool
	window    *Window
	nextTaken *WorkRequest // a shared Receive's successor in its endpoint's taken list
	sge       []nd.SGE     // backing array of SGL
	inline    []byte       // backing array of inline bytes
}

// reset makes wr a new request of op: every field is set, so that none
// survives from the request that last used the slot, and the backing
// arrays sge (emptied) and inline are kept. Field by field: a composite
// literal assigned to *wr is built on the stack with narrow stores and
// copied with wide loads, which the processor cannot forward from those
// stores (a stall on every post). TestWorkRequestReset lists the fields.
func (wr *WorkRequest) reset(op Op, flags nd.Flags, seq uint64, res *nd.Result) {
	wr.Op, wr.Flags, wr.SGL, wr.Length = op, flags, nil, 0
	wr.Remote, wr.Offset, wr.Seq = nd.MWDescriptor{}, 0, seq
	wr.result, wr.status, wr.cause = res, nd.Success, nd.CauseNone
	wr.preset, wr.done, wr.counted, wr.solicited = false, false, false, false
	wr.window, wr.nextTaken = nil, nil
	wr.sge = wr.sge[:0]
}

// workQueue is a fixed ring of work requests: [head, next) are issued and
// not yet retired, [next, tail) are waiting to be issued.
type workQueue struct {
	wrs              []WorkRequest
	head, next, tail uint64
	// Requests posted and not yet reaped from the completion queue (or
	// retired silently): the queue is full when they fill every slot.
	// Posted under ep.mu.
	outstanding slotCount
}

func (q *workQueue) init(entries, sges, inline int) {
	q.wrs = make([]WorkRequest, entries)
	sgeBacking := make([]nd.SGE, entries*sges)
	var inlineBacking []byte
	if inline > 0 {
		inlineBacking = make([]byte, entries*inline)
	}
	for i := range q.wrs {
		q.wrs[i].sge = sgeBacking[i*sges : i*sges : (i+1)*sges]
		if inline > 0 {
			q.wrs[i].inline = inlineBacking[i*inline : (i+1)*inline : (i+1)*inline]
		}
	}
}

func (q *workQueue) slot(i uint64) *WorkRequest { return &q.wrs[i%uint64(len(q.wrs))] }

func (q *workQueue) full() bool { return q.outstanding.inUse() >= len(q.wrs) }

// slotCount counts the requests of a queue that hold a slot: posted and
// not yet reaped. A post counts under the queue owner's lock (ep.mu, or
// the SRQ's mu), with a plain add on the poster's path; a reap counts
// wherever the completion is taken (CQ.take, under the CQ's lock, or a
// silent retirement), atomically. The two are kept apart so that a post
// costs no atomic read-modify-write (the reaper's side pays it, after the
// request completed). Read under the owner's lock, inUse is never below
// the true count: a reap not yet counted keeps its slot a moment longer.
type slotCount struct {
	posted uint64 // under the owner's lock
	reaped atomic.Uint64
}

// inUse is the number of requests posted and not yet reaped; the caller
// holds the owner's lock.
func (c *slotCount) inUse() int { return int(c.posted - c.reaped.Load()) }

// release counts one request reaped (its slot free); safe from any
// goroutine.
func (c *slotCount) release() { c.reaped.Add(1) }

// reserve takes the slot at the tail for a new request.
func (q *workQueue) reserve(op Op, res *nd.Result, flags nd.Flags) *WorkRequest {
	wr := q.slot(q.tail)
	wr.reset(op, flags, q.tail, res)
	q.tail++
	q.outstanding.posted++
	return wr
}
