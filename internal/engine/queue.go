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

// workQueue is a fixed ring of work requests: [head, next) are issued and
// not yet retired, [next, tail) are waiting to be issued.
type workQueue struct {
	wrs              []WorkRequest
	head, next, tail uint64
	// Requests posted and not yet reaped from the completion queue (or
	// retired silently): the queue is full when they fill every slot.
	outstanding atomic.Int32
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

func (q *workQueue) full() bool { return int(q.outstanding.Load()) >= len(q.wrs) }

// reserve takes the slot at the tail for a new request.
func (q *workQueue) reserve(op Op, res *nd.Result, flags nd.Flags) *WorkRequest {
	wr := q.slot(q.tail)
	sge, inline := wr.sge[:0], wr.inline
	*wr = WorkRequest{Op: op, Flags: flags, Seq: q.tail, result: res, sge: sge, inline: inline}
	q.tail++
	q.outstanding.Add(1)
	return wr
}
