package engine

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/godirect/nd"
	"github.com/godirect/nd/internal/ndrules"
)

// CQ is a completion queue: a bounded ring of the callers' *nd.Result
// pointers with ND's Notify arm-and-broadcast rules. It implements
// nd.CompletionQueue and is safe for concurrent use.
type CQ struct {
	a  *Adapter
	mu sync.Mutex

	ring       []completion
	head, size int

	overrun bool // the queue overran: it and its endpoints are dead
	// closed: Close was called. The queue still takes the completions of
	// requests accepted before (its endpoints are closed, so no new ones
	// come) and GetResults still hands them back.
	closed bool
	// shut mirrors closed for the endpoints' checks without mu: it is set
	// when Close starts, so a post after any Close of the queue returned
	// is refused, also while another Close call is still closing them.
	shut atomic.Bool

	// Completions that arrived since the queue was last drained and have
	// not fired a notification yet.
	pendingAny, pendingSolicited bool

	// The waiting Notify calls, by what satisfies them.
	waitAny, waitSolicited, waitErrors int
	waiters                            []*notifyWaiter
	spare                              []*notifyWaiter // waiters to reuse, so that Notify allocates nothing

	endpoints []*Endpoint // to terminate on overrun
	srqs      []*SRQ      // shared receive queues that flush into this one, closed with it

	// live is false only while the queue holds nothing and no completion
	// is pending for Notify: take then has nothing to do and skips mu.
	// Written under mu.
	live atomic.Bool
}

// completion is one queued Result and the slot count of the work queue it
// came from: the request occupies its queue slot until the completion is
// reaped, as on hardware.
type completion struct {
	res   *nd.Result
	owner *slotCount
}

// notifyWaiter is one waiting Notify call. Waiters are pooled, so that a
// Notify that waits allocates nothing.
type notifyWaiter struct {
	ch  chan nd.Status // receives the firing's status; capacity 1
	typ nd.NotifyType
}

// takeWaiterLocked returns a waiter to reuse, or a new one. q.mu held.
func (q *CQ) takeWaiterLocked() *notifyWaiter {
	if n := len(q.spare); n > 0 {
		w := q.spare[n-1]
		q.spare[n-1] = nil
		q.spare = q.spare[:n-1]
		return w
	}
	return &notifyWaiter{ch: make(chan nd.Status, 1)}
}

// putWaiter keeps w, whose channel is empty, for a later Notify.
func (q *CQ) putWaiter(w *notifyWaiter) {
	q.mu.Lock()
	q.spare = append(q.spare, w)
	q.mu.Unlock()
}

var _ nd.CompletionQueue = (*CQ)(nil)

func newCQ(a *Adapter, entries int) *CQ {
	return &CQ{a: a, ring: make([]completion, entries)}
}

// push queues res. It reports false if the queue overran; the completion
// is then lost, as on hardware, and the caller's endpoint is terminated.
// Overrun terminates every endpoint that uses the queue. A closed queue
// still takes completions: they are of requests accepted before it closed.
func (q *CQ) push(res *nd.Result, owner *slotCount, solicited bool) bool {
	q.mu.Lock()
	if q.overrun {
		q.mu.Unlock()
		owner.release()
		return false
	}
	if q.size == len(q.ring) {
		q.overrun = true
		q.fireLocked(nd.ErrBufferOverflow)
		eps := slices.Clone(q.endpoints)
		q.mu.Unlock()
		owner.release()
		for _, ep := range eps {
			go ep.terminate(nd.ErrBufferOverflow, endReason{op: "CompletionQueue", st: nd.ErrBufferOverflow})
		}
		return false
	}
	q.ring[(q.head+q.size)%len(q.ring)] = completion{res, owner}
	q.size++
	if !q.live.Load() {
		q.live.Store(true)
	}
	failed := res.Status != nd.Success
	q.pendingAny = true
	if solicited || failed {
		q.pendingSolicited = true
	}
	if q.waitAny > 0 || (q.waitSolicited > 0 && (solicited || failed)) {
		q.fireLocked(nd.Success)
	}
	q.mu.Unlock()
	return true
}

// fireLocked completes every waiting Notify with status.
func (q *CQ) fireLocked(status nd.Status) {
	q.pendingAny, q.pendingSolicited = false, false
	for i, w := range q.waiters {
		w.ch <- status
		q.waiters[i] = nil
	}
	q.waiters = q.waiters[:0]
	q.waitAny, q.waitSolicited, q.waitErrors = 0, 0, 0
}

// GetResults implements nd.CompletionQueue.
func (q *CQ) GetResults(results []*nd.Result) int {
	n := q.take(results)
	if n == 0 {
		if q.poll() {
			return q.take(results)
		}
	}
	return n
}

// take moves up to len(results) completions out of the queue.
func (q *CQ) take(results []*nd.Result) int {
	if !q.live.Load() {
		return 0
	}
	q.mu.Lock()
	n := 0
	for n < len(results) && q.size > 0 {
		c := q.ring[q.head]
		results[n] = c.res
		c.owner.release()
		q.ring[q.head] = completion{}
		q.head = (q.head + 1) % len(q.ring)
		q.size--
		n++
	}
	if n < len(results) {
		// Drained: what arrived so far has been seen.
		q.pendingAny, q.pendingSolicited = false, false
		if q.live.Load() {
			q.live.Store(false)
		}
	}
	q.mu.Unlock()
	return n
}

// poll lets the transport's readiness set (Progress), if it has one,
// handle what has arrived; it reports whether it handled something.
func (q *CQ) poll() bool {
	if pr := q.a.progress; pr != nil {
		return pr.Poll()
	}
	return false
}

// watch tells the transport's readiness set, if it has one, that the
// application waits instead of polling.
func (q *CQ) watch() {
	if pr := q.a.progress; pr != nil {
		pr.Watch()
	}
}

// Notify implements nd.CompletionQueue.
func (q *CQ) Notify(ctx context.Context, typ nd.NotifyType) error {
	// What has arrived already counts: a completion it makes satisfies
	// this call at once.
	q.mu.Lock()
	st := q.a.closedStatus(q.closed)
	q.mu.Unlock()
	if st != nd.Success {
		return st
	}
	if err := ndrules.NotifyType(typ); err != nil {
		return err
	}
	q.poll()
	q.mu.Lock()
	switch {
	case q.closed:
		// Closed while this call polled: it was waiting.
		q.mu.Unlock()
		return &nd.OpError{Op: "Notify", Status: nd.ErrCanceled}
	case q.overrun:
		q.mu.Unlock()
		return nd.ErrBufferOverflow
	}
	if q.pendingLocked(typ) {
		q.pendingAny, q.pendingSolicited = false, false
		q.mu.Unlock()
		return nil
	}
	q.countWaiterLocked(typ, 1)
	w := q.takeWaiterLocked()
	w.typ = typ
	q.waiters = append(q.waiters, w)
	q.mu.Unlock()
	q.watch()
	if pr := q.a.progress; pr != nil {
		defer pr.Unwatch()
	}

	select {
	case st := <-w.ch:
		q.putWaiter(w)
		return st.Err()
	case <-ctx.Done():
	}
	if q.forgetWaiter(w) {
		return canceled("Notify", ctx.Err())
	}
	// It fired just as ctx ended: the firing wins.
	st = <-w.ch
	q.putWaiter(w)
	return st.Err()
}

// pendingLocked reports whether a completion that arrived since the queue
// was last drained satisfies a Notify of typ at once. q.mu held.
func (q *CQ) pendingLocked(typ nd.NotifyType) bool {
	switch typ {
	case nd.NotifyAny:
		return q.pendingAny
	case nd.NotifySolicited:
		return q.pendingSolicited
	}
	return false
}

// countWaiterLocked adds d to the count of waiting Notify calls of typ.
// q.mu held.
func (q *CQ) countWaiterLocked(typ nd.NotifyType, d int) {
	switch typ {
	case nd.NotifyAny:
		q.waitAny += d
	case nd.NotifySolicited:
		q.waitSolicited += d
	case nd.NotifyErrors:
		q.waitErrors += d
	}
}

// forgetWaiter takes w, whose Notify's context ended, out of the waiting
// calls and keeps it for reuse; it reports false when a firing took it
// first (its status is then in w.ch).
func (q *CQ) forgetWaiter(w *notifyWaiter) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	i := slices.Index(q.waiters, w)
	if i < 0 {
		return false
	}
	q.waiters = slices.Delete(q.waiters, i, i+1)
	q.countWaiterLocked(w.typ, -1)
	q.spare = append(q.spare, w)
	return true
}

// Resize implements nd.CompletionQueue.
func (q *CQ) Resize(entries int) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	if st := q.a.closedStatus(q.closed); st != nd.Success {
		return st
	}
	if err := ndrules.Resize(&q.a.info, entries, q.size); err != nil {
		return err
	}
	ring := make([]completion, entries)
	for i := 0; i < q.size; i++ {
		ring[i] = q.ring[(q.head+i)%len(q.ring)]
	}
	q.ring, q.head = ring, 0
	return nil
}

// Close implements nd.CompletionQueue: waiting Notify calls return
// ErrCanceled and every endpoint that uses the queue is closed, so that
// their outstanding requests complete ErrCanceled (into this queue too,
// where GetResults still finds them) and later posts are refused.
func (q *CQ) Close() error {
	q.mu.Lock()
	if q.closed {
		q.mu.Unlock()
		return nil
	}
	q.closed = true
	q.shut.Store(true)
	q.a.closes.Add(1)
	q.fireLocked(nd.ErrCanceled)
	eps := slices.Clone(q.endpoints)
	srqs := slices.Clone(q.srqs)
	q.mu.Unlock()
	for _, s := range srqs {
		s.Close()
	}
	for _, ep := range eps {
		ep.close(nd.ErrCanceled)
	}
	q.a.forgetCQ(q)
	return nil
}

// attach adds ep to the endpoints that use the queue; it reports false if
// the queue is closed.
func (q *CQ) attach(ep *Endpoint) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return false
	}
	q.endpoints = append(q.endpoints, ep)
	return true
}

// attachSRQ adds s to the shared receive queues that flush into the queue;
// it reports false if the queue is closed.
func (q *CQ) attachSRQ(s *SRQ) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return false
	}
	q.srqs = append(q.srqs, s)
	return true
}

func (q *CQ) detachSRQ(s *SRQ) {
	q.mu.Lock()
	if i := slices.Index(q.srqs, s); i >= 0 {
		q.srqs = slices.Delete(q.srqs, i, i+1)
	}
	q.mu.Unlock()
}

func (q *CQ) detach(ep *Endpoint) {
	q.mu.Lock()
	q.endpoints = remove(q.endpoints, ep)
	q.mu.Unlock()
}

// remove returns eps without ep.
func remove(eps []*Endpoint, ep *Endpoint) []*Endpoint {
	if i := slices.Index(eps, ep); i >= 0 {
		return slices.Delete(eps, i, i+1)
	}
	return eps
}

// canceled is the error of a blocking call whose context ended.
func canceled(op string, cause error) error {
	return &nd.OpError{Op: op, Status: nd.ErrCanceled, Err: cause}
}
