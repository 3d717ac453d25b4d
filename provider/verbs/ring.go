//go:build verbs && linux

package verbs

import "github.com/godirect/nd"

// A ring holds the records of one direction of an endpoint, in post order.
// It is guarded by the mutex of its completion queue. A record lives from
// its post until its completion is queued (or, for a silent success, until
// it finishes); the slot counts against ND's queue depth until GetResults
// hands the completion back (outstanding).
type ring struct {
	ep          *endpoint
	q           *cq
	key         uint64 // wr_id >> 32
	recv        bool
	recs        []rec
	seq, dseq   uint32 // next to post, next to deliver
	outstanding int
}

type rec struct {
	res    *nd.Result
	seq    uint32
	parts  int // device work requests not yet completed
	status nd.Status
	cause  nd.Cause // the device's remote access error; a local one otherwise (advance)
	bytes  int
	silent bool
	done   bool
	live   bool
}

func newRing(ep *endpoint, q *cq, key uint64, depth int, recv bool) *ring {
	return &ring{ep: ep, q: q, key: key, recv: recv, recs: make([]rec, depth)}
}

// reserve takes the next slot (q.mu held); nil when the queue is full.
func (r *ring) reserve(res *nd.Result, silent bool, bytes int) *rec {
	if r.outstanding >= len(r.recs) {
		return nil
	}
	x := &r.recs[r.seq%uint32(len(r.recs))]
	*x = rec{res: res, seq: r.seq, status: nd.Success, bytes: bytes, silent: silent, live: true, parts: 1}
	r.seq++
	r.outstanding++
	return x
}

func (r *ring) wrID(seq uint32) uint64 { return r.key<<32 | uint64(seq) }

// finish completes a record in software (q.mu held).
func (r *ring) finish(x *rec, st nd.Status) {
	if !x.done {
		x.done = true
		if x.status == nd.Success {
			x.status = st
		}
	}
	r.advance()
}

// hwDone records a device completion (q.mu held): its status and cause
// (wcStatus) and, for a Receive, the bytes placed.
func (r *ring) hwDone(seq uint32, st nd.Status, cause nd.Cause, bytes int) {
	x := &r.recs[seq%uint32(len(r.recs))]
	if !x.live || x.seq != seq || x.done {
		return
	}
	if r.recv && st == nd.Success {
		x.bytes = bytes
	}
	x.parts--
	if st != nd.Success {
		x.status, x.cause = st, cause
		x.done = true
		r.ep.dead.Store(true)
		go r.ep.terminate()
	} else if x.parts <= 0 {
		x.done = true
	}
	r.advance()
}

// advance queues finished records in post order (q.mu held).
func (r *ring) advance() {
	for r.dseq != r.seq {
		x := &r.recs[r.dseq%uint32(len(r.recs))]
		if !x.done {
			return
		}
		if x.silent && x.status == nd.Success {
			r.outstanding--
		} else {
			if x.status == nd.ErrAccessViolation && x.cause == nd.CauseNone {
				x.cause = nd.CauseLocalAccess // localCheck's, or the device's local protection error
			}
			x.res.Status, x.res.Cause = x.status, x.cause
			x.res.BytesTransferred = x.bytes
			if x.status != nd.Success {
				x.res.BytesTransferred = 0
			}
			r.q.push(x.res, r)
		}
		*x = rec{}
		r.dseq++
	}
}

// cancelAll completes every unfinished record with ErrCanceled (q.mu held).
func (r *ring) cancelAll() {
	for s := r.dseq; s != r.seq; s++ {
		x := &r.recs[s%uint32(len(r.recs))]
		if x.live && !x.done {
			x.done = true
			x.status = nd.ErrCanceled
		}
	}
	r.advance()
}
