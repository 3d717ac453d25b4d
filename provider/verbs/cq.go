//go:build verbs && linux

package verbs

import (
	"context"
	"os"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/godirect/nd"
	"github.com/godirect/nd/internal/ndrules"
)

// A cq is an ND completion queue: one ibv_cq (sized for the queue pairs
// that use it, which can exceed ND's entries) and its completion channel,
// plus the software queue of finished requests in ND order. ND's entries
// bound the software queue; a completion that does not fit overruns it.
//
// Every request of an endpoint has a record in a ring per direction (see
// ring); hardware completions and the completions the provider makes itself
// (Bind, Invalidate, requests after the connection ended, local errors) mark
// records done, and records are moved to the software queue in post order.
type cq struct {
	a      *Adapter
	hw     cCQ
	ch     cChan
	file   *os.File // a dup of the channel's descriptor, in the Go poller
	wcs    *wcArea
	hwSize int
	wg     sync.WaitGroup

	mu       sync.Mutex
	closed   bool
	shut     atomic.Bool // closed, for the endpoints' checks without mu
	entries  int
	attached int // queue depth of the queue pairs using hw
	rings    map[uint64]*ring
	srqs     map[uint64]*srq // shared receive queues whose Receives complete here, by key
	fifo     []fifoEntry     // ring buffer of finished requests
	head, n  int
	overrun  bool
	unfired  bool // a completion arrived since the queue was last drained and has not fired
	errSeen  bool // an error completion arrived and has not fired NotifySolicited
	waiters  []*waiter
	armed    int // armNone, armSolicited, armAny
	errKick  bool
}

// fifoEntry is a finished request: of ring r, or a Receive of shared
// receive queue s.
type fifoEntry struct {
	res *nd.Result
	r   *ring
	s   *srq
}

// release frees the entry the request held in its queue.
func (e *fifoEntry) release() {
	if e.s != nil {
		e.s.reaped()
	} else {
		e.r.outstanding--
	}
}

type waiter struct {
	typ nd.NotifyType
	ch  chan error
}

const (
	armNone = iota
	armSolicited
	armAny
)

var _ nd.CompletionQueue = (*cq)(nil)

func newCQ(a *Adapter, entries int) (*cq, error) {
	size := min(max(entries, hwCQMin), a.dev.maxCQE)
	hw, ch, fd, err := createCQ(a.ctx, size)
	if err != nil {
		return nil, &nd.OpError{Op: "CreateCompletionQueue", Status: nd.ErrInsufficientResources, Err: err}
	}
	dfd, err := syscall.Dup(fd)
	if err != nil {
		destroyCQ(hw, ch)
		return nil, &nd.OpError{Op: "CreateCompletionQueue", Status: nd.ErrInsufficientResources, Err: err}
	}
	syscall.CloseOnExec(dfd)
	q := &cq{
		a: a, hw: hw, ch: ch, file: os.NewFile(uintptr(dfd), "ibv_comp_channel"), wcs: newWCArea(32),
		hwSize: size, entries: entries, rings: map[uint64]*ring{}, srqs: map[uint64]*srq{}, fifo: make([]fifoEntry, entries),
	}
	q.wg.Add(1)
	go q.eventLoop()
	return q, nil
}

// eventLoop waits for completion events in the Go poller and reads them
// only when the channel is readable.
func (q *cq) eventLoop() {
	defer q.wg.Done()
	rc, err := q.file.SyscallConn()
	if err != nil {
		return
	}
	wait := func(uintptr) bool { return getCQEvent(q.ch) } // made once: a wake-up allocates nothing
	for {
		err := rc.Read(wait)
		if err != nil {
			return
		}
		q.mu.Lock()
		q.onEvent()
		q.mu.Unlock()
	}
}

// onEvent handles a fired arm (q.mu held).
func (q *cq) onEvent() {
	if q.closed {
		return
	}
	prev, kick := q.armed, q.errKick
	q.armed, q.errKick = armNone, false
	q.drain()
	if len(q.waiters) == 0 {
		return
	}
	switch {
	case q.hasAny():
		q.fire(nil)
	case prev == armSolicited && !kick:
		q.fire(nil) // the device saw a solicited completion
	case q.errSeen:
		q.fire(nil)
	}
	q.rearm()
}

func (q *cq) hasAny() bool {
	for _, w := range q.waiters {
		if w.typ == nd.NotifyAny {
			return true
		}
	}
	return false
}

// fire completes the waiters (all but NotifyErrors ones, unless err is an
// overrun) with err.
func (q *cq) fire(err error) {
	kept := q.waiters[:0]
	for _, w := range q.waiters {
		if w.typ == nd.NotifyErrors && err == nil {
			kept = append(kept, w)
			continue
		}
		w.ch <- err
	}
	clear(q.waiters[len(kept):])
	q.waiters = kept
	q.unfired, q.errSeen = false, false
}

// rearm arms the device for the waiters left (q.mu held) and drains what
// arrived before the arm took effect.
func (q *cq) rearm() {
	want := armNone
	for _, w := range q.waiters {
		switch w.typ {
		case nd.NotifyAny:
			want = armAny
		case nd.NotifySolicited:
			want = max(want, armSolicited)
		}
	}
	if want == armNone || want <= q.armed {
		return
	}
	reqNotify(q.hw, want == armSolicited)
	q.armed = want
	if q.drain() > 0 && want == armAny {
		q.fire(nil)
	}
	q.evaluate()
}

// kick makes the queue notice the end of a connection: solicited waiters
// must fire on the flush completions, which devices need not signal as
// solicited.
func (q *cq) kick() {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return
	}
	q.drain()
	q.evaluate()
	if len(q.waiters) > 0 && q.armed == armSolicited {
		reqNotify(q.hw, false)
		q.armed, q.errKick = armAny, true
		q.drain()
		q.evaluate()
	}
}

// evaluate fires waiters satisfied by software-visible state (q.mu held).
func (q *cq) evaluate() {
	if len(q.waiters) == 0 {
		return
	}
	if q.unfired && q.hasAny() || q.errSeen {
		q.fire(nil)
	}
}

// drain moves hardware completions into the rings (q.mu held) and returns
// how many it polled.
func (q *cq) drain() int {
	total := 0
	for {
		n := q.wcs.poll(q.hw)
		for i := range n {
			wrID, st, _, bytes := q.wcs.wc(i)
			r := q.rings[wrID>>32]
			if r == nil {
				if s := q.srqs[wrID>>32]; s != nil {
					st, _ := wcStatus(st, true, q.a.dev.iwarp)
					s.hwDone(q, uint32(wrID), st, bytes, q.wcs.qpNum(i))
				}
				continue
			}
			// The direction comes from the ring, not the completion's
			// opcode: ibv_poll_cq leaves opcode undefined unless the
			// status is IBV_WC_SUCCESS (rxe reports 0, IBV_WC_SEND, for a
			// failed Receive).
			status, cause := wcStatus(st, r.recv, q.a.dev.iwarp)
			r.hwDone(uint32(wrID), status, cause, bytes)
		}
		total += n
		if n < q.wcs.cap {
			return total
		}
	}
}

// push queues a finished request (q.mu held). A closed queue still takes
// the completions of requests accepted before it closed (Close closed their
// endpoints), for GetResults to hand back.
func (q *cq) push(res *nd.Result, r *ring) { q.pushEntry(fifoEntry{res: res, r: r}) }

// pushSRQ queues a finished Receive of shared receive queue s (q.mu held).
func (q *cq) pushSRQ(res *nd.Result, s *srq) { q.pushEntry(fifoEntry{res: res, s: s}) }

func (q *cq) pushEntry(e fifoEntry) {
	res := e.res
	if q.overrun {
		e.release()
		return
	}
	if q.n == q.entries {
		e.release()
		q.overrun = true
		q.fire(nd.ErrBufferOverflow)
		for _, rr := range q.rings {
			go rr.ep.terminate()
		}
		return
	}
	q.fifo[(q.head+q.n)%len(q.fifo)] = e
	q.n++
	q.unfired = true
	if res.Status != nd.Success {
		q.errSeen = true
	}
}

// GetResults implements nd.CompletionQueue. It polls the device once per
// batch of 32 completions and allocates nothing.
func (q *cq) GetResults(results []*nd.Result) int {
	q.mu.Lock()
	defer q.mu.Unlock()
	if !q.closed { // the device queue is gone once closed; the fifo stays
		q.drain()
		q.evaluate()
	}
	got := 0
	for got < len(results) && q.n > 0 {
		e := &q.fifo[q.head]
		results[got] = e.res
		e.release()
		*e = fifoEntry{}
		q.head = (q.head + 1) % len(q.fifo)
		q.n--
		got++
	}
	if q.n == 0 {
		q.unfired, q.errSeen = false, false
	}
	return got
}

// Notify implements nd.CompletionQueue.
func (q *cq) Notify(ctx context.Context, typ nd.NotifyType) error {
	q.mu.Lock()
	if err := q.a.closedErr(q.closed); err != nil {
		q.mu.Unlock()
		return err
	}
	if err := ndrules.NotifyType(typ); err != nil {
		q.mu.Unlock()
		return err
	}
	if q.overrun {
		q.mu.Unlock()
		return nd.ErrBufferOverflow
	}
	q.drain()
	if q.overrun {
		q.mu.Unlock()
		return nd.ErrBufferOverflow
	}
	if typ == nd.NotifyAny && q.unfired || typ != nd.NotifyErrors && q.errSeen {
		q.fire(nil)
		q.mu.Unlock()
		return nil
	}
	w := waiterPool.Get().(*waiter)
	w.typ = typ
	q.waiters = append(q.waiters, w)
	q.rearm()
	q.mu.Unlock()
	select {
	case err := <-w.ch:
		waiterPool.Put(w)
		return err
	case <-ctx.Done():
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	for i, x := range q.waiters {
		if x == w {
			q.waiters = append(q.waiters[:i], q.waiters[i+1:]...)
			waiterPool.Put(w) // never fired: its channel is empty
			return canceled("Notify", ctx)
		}
	}
	err := <-w.ch // fired meanwhile
	waiterPool.Put(w)
	return err
}

// waiterPool keeps waiters (each with its channel of capacity 1, empty when
// pooled), so that a Notify that waits allocates nothing.
var waiterPool = sync.Pool{New: func() any { return &waiter{ch: make(chan error, 1)} }}

// Resize implements nd.CompletionQueue (in software: the device queue is
// sized for the queue pairs, not for ND's entries).
func (q *cq) Resize(entries int) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	if err := q.a.closedErr(q.closed); err != nil {
		return err
	}
	if err := ndrules.CQEntries("Resize", &q.a.info, entries); err != nil {
		return err
	}
	q.drain()
	if err := ndrules.Resize(&q.a.info, entries, q.n); err != nil {
		return err
	}
	f := make([]fifoEntry, entries)
	for i := range q.n {
		f[i] = q.fifo[(q.head+i)%len(q.fifo)]
	}
	q.fifo, q.head, q.entries = f, 0, entries
	return nil
}

// attach reserves device entries for a queue of depth entries, for the
// call op (CreateEndpoint, CreateEndpointWithSRQ).
func (q *cq) attach(op string, r *ring, depth int) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		if r.recv {
			return ndrules.Arg(op, "inbound", nd.ErrInvalidParameter1, ndrules.NotOpenQueue)
		}
		return ndrules.Arg(op, "outbound", nd.ErrInvalidParameter2, ndrules.NotOpenQueue)
	}
	if q.attached+depth > q.hwSize {
		want := q.attached + depth
		if want > q.a.dev.maxCQE || resizeCQ(q.hw, want) != nil {
			return nd.ErrInsufficientResources
		}
		q.hwSize = want
	}
	q.attached += depth
	q.rings[r.key] = r
	return nil
}

// poll moves what the device completed into the queue and fires what it
// satisfies.
func (q *cq) poll() {
	q.mu.Lock()
	if !q.closed {
		q.drain()
		q.evaluate()
	}
	q.mu.Unlock()
}

// watch arms the device queue for its next completion, if nothing armed
// it, so that the event loop polls it then (for a shared receive queue's
// limit event that came before the completion of the Receive taken).
func (q *cq) watch() {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return
	}
	if q.armed == armNone {
		reqNotify(q.hw, false)
		q.armed = armAny
	}
	q.drain()
	q.evaluate()
}

// attachSRQ routes the completions of s to q and reserves device entries
// for its depth.
func (q *cq) attachSRQ(s *srq, depth int) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return ndrules.Arg("CreateSharedReceiveQueue", "cq", nd.ErrInvalidParameter1, ndrules.NotOpenQueue)
	}
	if q.attached+depth > q.hwSize {
		want := q.attached + depth
		if want > q.a.dev.maxCQE || resizeCQ(q.hw, want) != nil {
			return &nd.OpError{Op: "CreateEndpoint", Status: nd.ErrInsufficientResources}
		}
		q.hwSize = want
	}
	q.attached += depth
	q.srqs[s.key] = s
	return nil
}

// detachSRQ undoes attachSRQ, after handing s what completed already.
func (q *cq) detachSRQ(s *srq, depth int) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.srqs[s.key] == s {
		if !q.closed {
			q.drain()
			q.evaluate()
		}
		delete(q.srqs, s.key)
		q.attached -= depth
	}
}

func (q *cq) detach(r *ring, depth int) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.rings[r.key] == r {
		delete(q.rings, r.key)
		q.attached -= depth
	}
}

// Close implements nd.CompletionQueue.
func (q *cq) Close() error {
	q.mu.Lock()
	if q.closed {
		q.mu.Unlock()
		return nil
	}
	q.closed = true
	q.shut.Store(true)
	for _, w := range q.waiters {
		w.ch <- &nd.OpError{Op: "Notify", Status: nd.ErrCanceled, Err: errClosed}
	}
	q.waiters = nil
	rings := make([]*ring, 0, len(q.rings))
	for _, r := range q.rings {
		rings = append(rings, r)
	}
	var srqs []*srq
	for _, s := range q.srqs {
		if s.cq == q {
			srqs = append(srqs, s)
		}
	}
	q.mu.Unlock()
	// Closing the queue closes the shared receive queues whose own queue
	// it is (their Receives complete ErrCanceled here).
	for _, s := range srqs {
		s.Close()
	}
	// Queue pairs must go before their completion queue: every endpoint
	// that uses the queue is closed, its outstanding requests complete
	// ErrCanceled (into this queue too, which keeps taking them).
	for _, r := range rings {
		r.ep.Close()
	}
	q.file.Close()
	q.wg.Wait()
	destroyCQ(q.hw, q.ch)
	q.wcs.free()
	q.a.mu.Lock()
	delete(q.a.cqs, q)
	q.a.mu.Unlock()
	return nil
}
