//go:build windows && (amd64 || arm64)

package ndspi

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/godirect/nd"
	"github.com/godirect/nd/internal/ndabi"
	"github.com/godirect/nd/internal/ndrules"
)

// cq is an nd.CompletionQueue over an INDCompletionQueue or an
// IND2CompletionQueue. GetResults asks the provider for completions into
// memory of its own (ND v1: an array of ND_RESULT pointers; ND v2: an
// array of ND2_RESULTs), finds each one's slot by the names it carries
// (slots.go), drops the successful completions of silent requests, and
// hands back the caller's Results with Status, Cause and BytesTransferred
// written. Completions taken from the provider but not yet handed back
// wait in a backlog, which GetResults empties first. Its methods are safe
// for concurrent use.
type cq struct {
	a       *adapter
	obj     com
	g       guard // Notify
	entries int

	closed atomic.Bool
	// overran: Notify reported ND_BUFFER_OVERFLOW; the provider delivers
	// nothing more, so Close does not wait for it.
	overran atomic.Bool
	// silent counts the silent requests posted to endpoints whose
	// completions come here and not yet seen: while it is 0, a Notify
	// that fires was fired by a completion to report.
	silent atomic.Int64

	mu      sync.Mutex // the provider's GetResults, the backlog, the release
	back    backlog
	scratch cmem
	batch   int // completions scratch holds

	// eps are the endpoints whose completions come here (under a.mu).
	eps map[*endpoint]struct{}
}

var _ nd.CompletionQueue = (*cq)(nil)

// cqBatch is how many completions one provider GetResults takes at most.
const cqBatch = 64

// CreateCompletionQueue implements nd.Adapter: ND v1's
// CreateCompletionQueue(entries) or ND v2's (with the adapter's overlapped
// file, no affinity). A size the provider refuses is ErrInvalidParameter.
func (a *adapter) CreateCompletionQueue(entries int) (nd.CompletionQueue, error) {
	if a.closed.Load() {
		return nil, nd.ErrDeviceRemoved
	}
	if entries < 1 {
		return nil, nd.ErrInvalidParameter
	}
	q := &cq{a: a, entries: entries, batch: cqBatch, eps: map[*endpoint]struct{}{}}
	var err error
	if a.v1 {
		q.scratch, err = allocC(cqBatch * int(wordSize))
	} else {
		q.scratch, err = allocC(cqBatch * ndabi.SizeofResult2)
	}
	if err != nil {
		return nil, err
	}
	s, err := newScratch()
	if err != nil {
		q.scratch.free()
		return nil, err
	}
	defer s.free()
	var st nd.Status
	if a.v1 {
		st = a.obj.call(ndabi.INDAdapterCreateCompletionQueue, uintptr(entries), s.ptr(0))
	} else {
		st = cqDepthParam(a.obj.call(ndabi.IND2AdapterCreateCompletionQueue, guidArg(&ndabi.IIDIND2CompletionQueue),
			uintptr(a.file), uintptr(uint32(min(entries, 1<<31))), 0, 0, s.ptr(0)))
	}
	if st != nd.Success {
		q.scratch.free()
		return nil, st
	}
	q.obj = com(s.word(0))
	if !add(a, a.cqs, q) {
		q.obj.release()
		q.scratch.free()
		return nil, nd.ErrDeviceRemoved
	}
	return q, nil
}

// cqOf is the queue nd names, if it is an open queue of a.
func (a *adapter) cqOf(x nd.CompletionQueue) (*cq, bool) {
	q, ok := x.(*cq)
	if !ok || q == nil || q.a != a || q.closed.Load() {
		return nil, false
	}
	return q, true
}

// GetResults implements nd.CompletionQueue. It allocates nothing.
func (q *cq) GetResults(results []*nd.Result) int {
	if len(results) == 0 {
		return 0
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	n := 0
	for n < len(results) && q.back.len() > 0 {
		it := q.back.pop()
		results[n] = it.res
		n++
		if it.pool != nil {
			it.pool.done(it.slot)
			q.reaped(it.pool)
		}
	}
	for n < len(results) && q.obj != 0 {
		want := min(len(results)-n, q.batch)
		got := q.poll(want)
		for i := range got {
			if res := q.resolve(i, false); res != nil {
				results[n] = res
				n++
			}
		}
		if got < want {
			break
		}
	}
	return n
}

// poll asks the provider for at most n completions into scratch.
func (q *cq) poll(n int) int {
	if q.a.v1 {
		return int(q.obj.raw(ndabi.INDCompletionQueueGetResults, q.scratch.addr, uintptr(n)))
	}
	return int(uint32(q.obj.raw(ndabi.IND2CompletionQueueGetResults, q.scratch.addr, uintptr(n))))
}

// resolve finds the request of the i-th completion in scratch and, unless
// it is a silent request's success (then nil), writes its status, cause
// and byte count into the caller's Result and returns it: a failed request
// reports 0 bytes, and an ND_ACCESS_VIOLATION (ND carries no cause) the
// cause the engine would give it: the peer's refusal for a Read or Write
// whose local entries all lay within live registrations, this side's
// otherwise. With keep its slot stays
// held (for the backlog). Completions that name no posted request are
// dropped.
func (q *cq) resolve(i int, keep bool) *nd.Result {
	r, p, slot, st, bytes, inbound, ok := q.completion(i, keep)
	if !ok {
		return nil
	}
	if r.silent {
		q.silent.Add(-1)
		if st == nd.Success {
			if keep {
				p.done(slot)
			}
			q.reaped(p)
			return nil
		}
	}
	r.res.Status, r.res.Cause, r.res.BytesTransferred = st, nd.CauseNone, bytes
	if st != nd.Success {
		r.res.BytesTransferred = 0
		if st == nd.ErrAccessViolation {
			r.res.Cause = nd.CauseLocalAccess
			if r.remote {
				r.res.Cause = nd.CauseRemoteAccess
			}
		}
	}
	if inbound && q.a.v1 {
		q.a.syncInvalidates()
	}
	if keep {
		q.back.push(backlogItem{res: r.res, pool: p, slot: slot})
	} else {
		q.reaped(p)
	}
	return r.res
}

// completion decodes the i-th completion in scratch: its record, pool and
// slot, status and byte count, and whether it is a Receive.
func (q *cq) completion(i int, keep bool) (r record, p *pool, slot uint32, st nd.Status, bytes int, inbound, ok bool) {
	if q.a.v1 {
		res := uintptr(q.scratch.word(i * int(wordSize)))
		if res == 0 {
			return
		}
		id, s, in := parseV1Tag(*(*uint64)(at(res + v1TagOffset)))
		qs := q.a.slots.get(id)
		if qs == nil {
			return
		}
		if p = qs.pool(in); p == nil {
			return
		}
		// Read the ND_RESULT while its slot is held: once complete gives
		// the slot back, the endpoint may free its memory.
		st, bytes = nd.Status(*(*uint32)(at(res))), clampInt(*(*uint64)(at(res + 8)))
		if r, ok = p.complete(s, keep); !ok {
			return
		}
		return r, p, s, st, bytes, in, true
	}
	base := i * ndabi.SizeofResult2
	status := q.scratch.u32(base)
	got := q.scratch.u32(base + 4)
	qp := q.scratch.word(base + 8)
	ctx := q.scratch.word(base + 16)
	typ := q.scratch.u32(base + 24)
	id, s, fromSRQ := parseRequestContext(ctx)
	if !fromSRQ {
		id = uint32(qp)
	}
	qs := q.a.slots.get(id)
	if qs == nil {
		return
	}
	in := typ == ndabi.RequestReceive
	if p = qs.pool(in); p == nil {
		return
	}
	if r, ok = p.complete(s, keep); !ok {
		return
	}
	bytes = r.bytes
	if in {
		bytes = int(got)
	}
	return r, p, s, nd.Status(status), bytes, in, true
}

// reaped tells p's owner that one of its requests was handed back (a
// closed endpoint goes once its last one is).
func (q *cq) reaped(p *pool) {
	if p.owner != nil {
		p.owner.reaped()
	}
}

// request is a Notify of the queue.
func (q *cq) request() request {
	return request{port: q.a.b.port, g: &q.g, obj: q.obj, v1: q.a.v1, op: "Notify", again: true, closed: q.closedStatus}
}

func (q *cq) closedStatus() nd.Status { return q.a.status(true) }

// Notify implements nd.CompletionQueue: ND's Notify, overlapped. The
// provider also fires ND_CQ_NOTIFY_ANY for the successful completions of
// silent requests, which nd does not report: when silent requests are
// outstanding, a firing takes the queue's first completion into the
// backlog to see, and waits again if there were only such.
func (q *cq) Notify(ctx context.Context, typ nd.NotifyType) error {
	if q.closed.Load() || q.a.closed.Load() {
		return q.closedStatus()
	}
	if err := ndrules.NotifyType(typ); err != nil {
		return err
	}
	for {
		silent := q.silent.Load()
		rq := q.request()
		err := rq.do(ctx, func(ov uintptr) nd.Status {
			if q.a.v1 {
				return q.obj.call(ndabi.INDCompletionQueueNotify, uintptr(typ), ov)
			}
			return q.obj.call(ndabi.IND2CompletionQueueNotify, uintptr(typ), ov)
		})
		if errors.Is(err, nd.ErrBufferOverflow) {
			q.overran.Store(true)
		}
		if err != nil || typ != nd.NotifyAny || silent == 0 && q.silent.Load() == 0 {
			return err
		}
		if q.takeOne() {
			return nil
		}
	}
}

// takeOne takes completions from the provider into the backlog until one
// to report; it reports false if only silent successes came.
func (q *cq) takeOne() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.obj == 0 || q.back.len() > 0 {
		return true
	}
	dropped := false
	for q.poll(1) == 1 {
		if q.resolve(0, true) != nil {
			return true
		}
		dropped = true
	}
	return !dropped
}

// Resize implements nd.CompletionQueue: ND's Resize (ND v2: only where the
// adapter has ND_ADAPTER_FLAG_CQ_RESIZE_SUPPORTED, else ErrNotSupported,
// the provider's answer). A size the provider refuses is
// ErrInvalidParameter.
func (q *cq) Resize(entries int) error {
	if q.closed.Load() || q.a.closed.Load() {
		return q.closedStatus()
	}
	if entries < 1 {
		return nd.ErrInvalidParameter
	}
	if !q.g.enter() {
		return q.closedStatus()
	}
	defer q.g.exit()
	var st nd.Status
	if q.a.v1 {
		st = q.obj.call(ndabi.INDCompletionQueueResize, uintptr(entries))
	} else {
		st = cqDepthParam(q.obj.call(ndabi.IND2CompletionQueueResize, uintptr(uint32(min(entries, 1<<31)))))
	}
	if st == nd.Success {
		q.entries = entries
	}
	return st.Err()
}

// Close implements nd.CompletionQueue: the endpoints that use the queue
// close (their requests are flushed into their queues), waiting Notify
// calls return ErrCanceled, and the completions the provider holds for the
// queue move to the backlog before the queue is released, so GetResults
// still returns them.
func (q *cq) Close() error {
	if q.closed.Swap(true) {
		return nil
	}
	q.a.mu.Lock()
	eps := make([]*endpoint, 0, len(q.eps))
	for e := range q.eps {
		eps = append(eps, e)
	}
	q.a.mu.Unlock()
	for _, e := range eps {
		e.Close()
	}
	for _, s := range snapshot(q.a, q.a.srqs) {
		if s.cq == q {
			s.Close()
		}
	}
	q.g.close(q.obj)
	q.mu.Lock()
	q.drain(drainWait)
	q.obj.release()
	q.obj = 0
	q.scratch.free()
	q.mu.Unlock()
	remove(q.a, q.a.cqs, q)
	return nil
}

// drainWait bounds how long a closing queue waits for the completions of
// its endpoints' flushed requests (a provider may deliver them after Flush
// returns; one whose queue overran delivers none).
const drainWait = time.Second

// drain moves what the provider holds for the queue into the backlog
// (q.mu held), until no endpoint of the queue has a request the provider
// holds, or for at most wait.
func (q *cq) drain(wait time.Duration) {
	if q.obj == 0 {
		return
	}
	deadline := time.Now().Add(wait)
	pause := 100 * time.Microsecond
	for {
		for {
			got := q.poll(q.batch)
			for i := range got {
				q.resolve(i, true)
			}
			if got < q.batch {
				break
			}
		}
		if q.outstanding() == 0 || q.overran.Load() || time.Now().After(deadline) {
			return
		}
		time.Sleep(pause)
		pause = min(2*pause, 10*time.Millisecond)
	}
}

// outstanding counts the requests the provider holds whose completions
// come here.
func (q *cq) outstanding() int {
	q.a.mu.Lock()
	defer q.a.mu.Unlock()
	n := 0
	for e := range q.eps {
		if e.in == q && e.qs.in != nil {
			n += e.qs.in.outstanding()
		}
		if e.out == q {
			n += e.qs.out.outstanding()
		}
	}
	return n
}
