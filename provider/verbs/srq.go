//go:build verbs && linux

package verbs

import (
	"context"
	"net/netip"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/godirect/nd"
	"github.com/godirect/nd/internal/ndrules"
)

// An srq is an ND shared receive queue on an ibv_srq.
//
// Its Receives go to the device at once. The device hands each to the queue
// pair that takes it, and the completion arrives on that queue pair's
// receive completion queue with the work request id the Receive was posted
// with: the queue's key (high 32 bits) and a slot of recs (low 32 bits,
// with a generation). Every completion queue that an endpoint of the queue
// uses knows the queue (cq.srqs) and hands such completions to hwDone.
//
// The low-water Notify arms the device's limit (ibv_modify_srq srq_limit);
// IBV_EVENT_SRQ_LIMIT_REACHED arrives through the device context's
// asynchronous event descriptor (async.go). Completions polled by anyone
// also fire it when the Receives left drop below the threshold.
//
// Verbs has no way to take Receives back out of an ibv_srq. Flush sends
// zero-length messages over a connection of the adapter to itself whose
// passive endpoint uses the queue (the drain pair): each takes the oldest
// Receive, writes none of its bytes, and completes it on the queue's own
// completion queue, where it is reported ErrCanceled. Close destroys the
// ibv_srq after every queue pair using it, so that nothing can take the
// Receives left, and completes them in software.
//
// Lock order: cq.mu, then srq.mu.
type srq struct {
	a       *Adapter
	cq      *cq
	key     uint64
	handle  uintptr
	entries int
	sge     int
	maxSGE  int // the SGE limit given at creation (sge is at least 1 for the device)
	limit   int // NotifyThreshold

	held atomic.Int32 // Receives posted and not yet reaped

	mu       sync.Mutex
	hw       cSRQ
	closed   bool
	ra       *recvArea
	recs     []srqRec
	free     []uint32 // free slots of recs
	seq      uint64
	waiting  int // Receives posted and not taken (as far as completions tell)
	armed    bool
	waiters  []chan error
	eps      map[uint32]*endpoint // by queue pair number
	cqs      map[*cq]int          // completion queues of the endpoints, with counts
	drainQPN uint32
	drainer  *endpoint // the active endpoint of the drain pair
	drainRes nd.Result
	flushMu  sync.Mutex // the drainer's posts and drainOut
	drainOut [16]*nd.Result
	pair     []closer // the drain pair's objects, closed last
}

type closer interface{ Close() error }

type srqRec struct {
	res      *nd.Result
	seq      uint64
	gen      uint16
	live     bool
	flushing bool // Flush sent a zero-length message for it
	bad      bool // an entry outside its registration: the device refuses it
}

var (
	_ nd.SharedReceiveQueue        = (*srq)(nil)
	_ nd.SharedReceiveQueueAdapter = (*Adapter)(nil)
)

// maxSRQDepth is the largest shared receive queue the provider creates:
// the drain pair's sender must be able to hold a zero-length Send for every
// Receive of the queue twice over (see Flush).
const maxSRQDepth = maxRequests / 2

// drainTimeout bounds the connection of the drain pair at creation.
const drainTimeout = 10 * time.Second

// CreateSharedReceiveQueue implements nd.SharedReceiveQueueAdapter.
func (a *Adapter) CreateSharedReceiveQueue(cqi nd.CompletionQueue, l nd.SharedReceiveQueueLimits) (nd.SharedReceiveQueue, error) {
	const op = "CreateSharedReceiveQueue"
	q, _ := cqi.(*cq)
	cqOK := q != nil && q.a == a && !q.shut.Load()
	if err := ndrules.CreateSharedReceiveQueue(a.isClosed(), &a.info, cqOK, &l); err != nil {
		return nil, err
	}
	a.mu.Lock()
	a.nextEP++
	key := uint64(a.nextEP) << 1
	a.mu.Unlock()
	s := &srq{
		a: a, cq: q, key: key, entries: l.Entries, sge: max(l.SGE, 1), maxSGE: l.SGE, limit: l.NotifyThreshold,
		recs: make([]srqRec, l.Entries), free: make([]uint32, l.Entries),
		eps: map[uint32]*endpoint{}, cqs: map[*cq]int{},
	}
	for i := range s.free {
		s.free[i] = uint32(len(s.free) - 1 - i)
	}
	if err := a.p.watchAsync(a.ctx); err != nil {
		return nil, withCause(op, nd.ErrInsufficientResources, err)
	}
	s.handle = a.p.registerSRQ(s)
	hw, err := createSRQ(a.pd, l.Entries, s.sge, s.handle)
	if err != nil {
		a.p.unregisterSRQ(s.handle)
		return nil, withCause(op, nd.ErrInsufficientResources, err)
	}
	s.hw = hw
	s.ra = newRecvArea(1, s.sge)
	if err := s.useCQ(q); err != nil {
		s.Close()
		return nil, withCause(op, nd.ErrInsufficientResources, err)
	}
	if err := s.openDrain(); err != nil {
		s.Close()
		return nil, withCause(op, nd.ErrInsufficientResources, err)
	}
	a.mu.Lock()
	if a.closed {
		a.mu.Unlock()
		s.Close()
		return nil, nd.ErrDeviceRemoved
	}
	a.srqs[s] = struct{}{}
	a.mu.Unlock()
	return s, nil
}

// openDrain connects the drain pair: an endpoint of the adapter (the
// sender, on a completion queue of its own) to an endpoint on the queue
// (whose inbound completion queue is the queue's own).
func (s *srq) openDrain() error {
	a := s.a
	ctx, cancel := context.WithTimeout(context.Background(), drainTimeout)
	defer cancel()
	own, err := a.CreateCompletionQueue(maxRequests)
	if err != nil {
		return err
	}
	s.pair = append(s.pair, own)
	l, err := a.Listen(1, 0, 0)
	if err != nil {
		return err
	}
	defer l.Close()
	active, err := a.CreateConnector()
	if err != nil {
		return err
	}
	s.pair = append(s.pair, active)
	lim := nd.EndpointLimits{InboundEntries: 1, OutboundEntries: maxRequests, InboundSGE: 1, OutboundSGE: 1}
	sender, err := active.CreateEndpoint(own, own, lim)
	if err != nil {
		return err
	}
	s.pair = append(s.pair, sender)
	done := make(chan error, 1)
	go func() {
		err := active.Connect(ctx, sender, netip.AddrPortFrom(a.addr, l.Port()), 0, 0, nil)
		if err == nil {
			err = active.CompleteConnect(ctx)
		}
		done <- err
	}()
	passive, err := a.CreateConnector()
	if err != nil {
		cancel()
		<-done
		return err
	}
	s.pair = append(s.pair, passive)
	err = l.GetConnectionRequest(ctx, passive)
	var recv nd.Endpoint
	if err == nil {
		recv, err = passive.(*connector).CreateEndpointWithSRQ(s.cq, own, s, lim)
	}
	if err == nil {
		s.pair = append(s.pair, recv)
		err = passive.Accept(ctx, recv, nil)
	}
	if err != nil {
		cancel()
		<-done
		return err
	}
	if err := <-done; err != nil {
		return err
	}
	r := recv.(*endpoint)
	r.mu.Lock()
	qpn := r.qpn
	r.mu.Unlock()
	s.mu.Lock()
	s.drainQPN, s.drainer = qpn, sender.(*endpoint)
	s.mu.Unlock()
	return nil
}

// useCQ makes q hand the queue's completions to it, and reserves device
// entries of q for every Receive of the queue (once per completion queue).
func (s *srq) useCQ(q *cq) error {
	s.mu.Lock()
	n := s.cqs[q]
	s.cqs[q] = n + 1
	s.mu.Unlock()
	if n > 0 {
		return nil
	}
	if err := q.attachSRQ(s, s.entries); err != nil {
		s.mu.Lock()
		delete(s.cqs, q)
		s.mu.Unlock()
		return err
	}
	return nil
}

// dropCQ undoes useCQ.
func (s *srq) dropCQ(q *cq) {
	s.mu.Lock()
	n := s.cqs[q] - 1
	if n > 0 {
		s.cqs[q] = n
	} else {
		delete(s.cqs, q)
	}
	s.mu.Unlock()
	if n == 0 {
		q.detachSRQ(s, s.entries)
	}
}

// closedErr is the error of a call after the queue or the adapter closed.
func (s *srq) closedErr() error {
	return s.a.closedErr(s.closed || s.cq.shut.Load())
}

// Receive implements nd.SharedReceiveQueue.
func (s *srq) Receive(res *nd.Result, sgl []nd.SGE) error {
	const op = "Receive"
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.closedErr(); err != nil {
		return err
	}
	total, st := ndrules.Receive(res, sgl, ndrules.PostLimits{MaxSGE: s.maxSGE, MaxLength: s.a.info.MaxInboundLength})
	if st != nd.Success {
		return st
	}
	if int(s.held.Add(1)) > s.entries || len(s.free) == 0 {
		s.held.Add(-1)
		return nd.ErrNoMoreEntries
	}
	slot := s.free[len(s.free)-1]
	s.free = s.free[:len(s.free)-1]
	x := &s.recs[slot]
	x.gen++
	x.res, x.seq, x.live, x.flushing = res, s.seq, true, false
	s.seq++
	s.waiting++
	i := s.ra.add(s.key<<32 | uint64(x.gen)<<16 | uint64(slot))
	for k := range sgl {
		b := sgl[k].Buffer
		if len(b) == 0 {
			continue
		}
		// An entry outside its registration (inline, another adapter's,
		// deregistered, out of bounds) gets an lkey that names no
		// registration (0): the device fails the Send that takes the
		// Receive, writing nothing, and the Receive completes
		// ErrAccessViolation whatever status the device gives it.
		lkey := uint32(0)
		if r, ok := sgl[k].Region.(*memRegion); ok && r.a == s.a && !r.dereg.Load() && r.contains(b) {
			lkey = r.lkey
		} else {
			x.bad = true
		}
		s.ra.addSGE(i, addrOf(b), len(b), lkey)
	}
	if total == 0 {
		s.ra.addSGE(i, uintptr(s.a.dummy), 0, s.a.dumKey)
	}
	if _, err := s.ra.postSRQ(s.hw); err != nil {
		x.live = false
		s.free = append(s.free, slot)
		s.waiting--
		s.held.Add(-1)
		return withCause(op, nd.ErrInsufficientResources, err)
	}
	return nil
}

// hwDone takes the device completion of a Receive of the queue that
// arrived on q (q.mu held): it goes to q in the order q's completions
// came, which per queue pair is message order.
func (s *srq) hwDone(q *cq, low uint32, st nd.Status, bytes int, qpn uint32) {
	s.mu.Lock()
	slot := low & 0xffff
	if int(slot) >= len(s.recs) {
		s.mu.Unlock()
		return
	}
	x := &s.recs[slot]
	if !x.live || x.gen != uint16(low>>16) {
		s.mu.Unlock()
		return
	}
	res := x.res
	if !x.flushing {
		s.waiting--
	}
	if x.bad && st != nd.Success && st != nd.ErrCanceled {
		st = nd.ErrAccessViolation
	}
	drained := qpn == s.drainQPN && s.drainQPN != 0
	*x = srqRec{gen: x.gen}
	s.free = append(s.free, slot)
	s.checkLow()
	var ep *endpoint
	if !drained && st != nd.Success && st != nd.ErrCanceled {
		ep = s.eps[qpn]
	}
	s.mu.Unlock()
	if drained {
		st, bytes = nd.ErrCanceled, 0
	}
	if st != nd.Success {
		bytes = 0
	}
	if ep != nil {
		ep.dead.Store(true)
		go ep.terminate()
	}
	cause := nd.CauseNone
	if st == nd.ErrAccessViolation {
		cause = nd.CauseLocalAccess // a Receive's entries are this side's
	}
	res.Status, res.Cause, res.BytesTransferred = st, cause, bytes
	q.pushSRQ(res, s)
}

// reaped releases the entry of a Receive whose completion GetResults
// handed back.
func (s *srq) reaped() { s.held.Add(-1) }

// checkLow fires the waiting Notify calls when the Receives left dropped
// below the threshold (s.mu held).
func (s *srq) checkLow() {
	if s.limit > 0 && s.waiting < s.limit {
		s.fire(nil)
	}
}

func (s *srq) fire(err error) {
	for _, ch := range s.waiters {
		ch <- err
	}
	clear(s.waiters)
	s.waiters = s.waiters[:0]
}

// onLimit is the device's IBV_EVENT_SRQ_LIMIT_REACHED. The event may be
// older than Receives posted since (the Notify it was armed for has
// returned), and it comes before the completion of the Receive whose
// taking raised it: the completion queues are polled, and the waiting
// Notify calls return when the Receives left, as completions tell, are
// below the threshold. Otherwise the limit is armed again and the
// completion queues are armed for their next completion, which reports the
// Receive taken.
func (s *srq) onLimit() {
	s.mu.Lock()
	s.armed = false
	cqs := s.cqList()
	s.mu.Unlock()
	for _, q := range cqs {
		q.poll()
	}
	s.mu.Lock()
	if s.closed || len(s.waiters) == 0 {
		s.mu.Unlock()
		return
	}
	if s.waiting < s.limit {
		s.fire(nil)
		s.mu.Unlock()
		return
	}
	if armSRQ(s.hw, s.limit) == nil {
		s.armed = true
	}
	s.mu.Unlock()
	for _, q := range cqs {
		q.watch()
	}
}

func (s *srq) cqList() []*cq {
	cqs := make([]*cq, 0, len(s.cqs))
	for q := range s.cqs {
		cqs = append(cqs, q)
	}
	return cqs
}

// Notify implements nd.SharedReceiveQueue.
func (s *srq) Notify(ctx context.Context) error {
	const op = "Notify"
	s.mu.Lock()
	if err := s.closedErr(); err != nil {
		s.mu.Unlock()
		return err
	}
	if s.limit > 0 && s.waiting < s.limit {
		s.mu.Unlock()
		return nil
	}
	ch := make(chan error, 1)
	s.waiters = append(s.waiters, ch)
	if s.limit > 0 && !s.armed {
		if err := armSRQ(s.hw, s.limit); err == nil {
			s.armed = true
		}
	}
	cqs := s.cqList()
	s.mu.Unlock()
	// Completions that arrived before the limit was armed, not yet polled,
	// count too.
	for _, q := range cqs {
		q.poll()
	}
	select {
	case err := <-ch:
		return err
	case <-ctx.Done():
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if i := slices.Index(s.waiters, ch); i >= 0 {
		s.waiters = slices.Delete(s.waiters, i, i+1)
		return canceled(op, ctx)
	}
	return <-ch
}

// Flush implements nd.SharedReceiveQueue: a zero-length Send over the drain
// pair for every Receive not yet taken. Each takes the oldest Receive in the
// device's queue; a Receive that an endpoint's message takes meanwhile
// completes on that endpoint as usual (and a zero-length Send then takes the
// next Receive, which may be one posted after the Flush).
func (s *srq) Flush() error {
	const op = "Flush"
	s.mu.Lock()
	if err := s.closedErr(); err != nil {
		s.mu.Unlock()
		return err
	}
	cqs := s.cqList()
	s.mu.Unlock()
	// Receives whose completions arrived are taken, not flushed.
	for _, q := range cqs {
		q.poll()
	}
	s.mu.Lock()
	if s.drainer.dead.Load() {
		s.mu.Unlock()
		return nd.ErrInsufficientResources
	}
	n := 0
	for i := range s.recs {
		if x := &s.recs[i]; x.live && !x.flushing {
			x.flushing = true
			n++
		}
	}
	s.waiting -= n
	if n > 0 {
		s.checkLow()
	}
	d := s.drainer
	s.mu.Unlock()
	if n == 0 {
		return nil
	}
	// The completions of earlier drains free their slots; a failed one
	// (which only a closing adapter causes) is reaped here.
	s.flushMu.Lock()
	defer s.flushMu.Unlock()
	for d.out.GetResults(s.drainOut[:]) == len(s.drainOut) {
		continue
	}
	d.StartRequestBatch()
	defer d.SubmitRequestBatch()
	for range n {
		if err := d.Send(&s.drainRes, nil, nd.FlagSilentSuccess); err != nil {
			return withCause(op, nd.ErrInsufficientResources, err)
		}
	}
	return nil
}

// attachEndpoint records e as a user of the queue.
func (s *srq) attachEndpoint(e *endpoint) error {
	if err := s.useCQ(e.in); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		go s.dropCQ(e.in)
		return ndrules.Arg("CreateEndpointWithSRQ", "srq", nd.ErrInvalidParameter3, notOpenSRQ)
	}
	return nil
}

// bindQP records the queue pair number of e once it exists.
func (s *srq) bindQP(e *endpoint, qpn uint32) {
	s.mu.Lock()
	s.eps[qpn] = e
	s.mu.Unlock()
}

// detachEndpoint undoes attachEndpoint and bindQP.
func (s *srq) detachEndpoint(e *endpoint, qpn uint32) {
	s.mu.Lock()
	if qpn != 0 && s.eps[qpn] == e {
		delete(s.eps, qpn)
	}
	s.mu.Unlock()
	s.dropCQ(e.in)
}

// Close implements nd.SharedReceiveQueue.
func (s *srq) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.fire(withCause("Notify", nd.ErrCanceled, errClosed))
	s.a.mu.Lock()
	var eps []*endpoint
	for e := range s.a.eps {
		if e.srq == s {
			eps = append(eps, e)
		}
	}
	s.a.mu.Unlock()
	s.mu.Unlock()
	for _, e := range eps {
		e.Close()
	}
	for i := len(s.pair) - 1; i >= 0; i-- {
		s.pair[i].Close()
	}
	// Completions of Receives taken before the queue pairs went are
	// queued where they arrived; what is left was taken by nobody.
	s.mu.Lock()
	cqs := s.cqList()
	s.mu.Unlock()
	for _, q := range cqs {
		q.poll()
	}
	s.mu.Lock()
	if s.hw != nil {
		destroySRQ(s.hw)
		s.hw = nil
	}
	var left []*srqRec
	for i := range s.recs {
		if x := &s.recs[i]; x.live {
			left = append(left, x)
		}
	}
	slices.SortFunc(left, func(x, y *srqRec) int { return int(x.seq - y.seq) })
	var results []*nd.Result
	for _, x := range left {
		results = append(results, x.res)
		*x = srqRec{gen: x.gen}
	}
	s.waiting = 0
	s.mu.Unlock()
	s.cq.mu.Lock()
	for _, res := range results {
		res.Status, res.Cause, res.BytesTransferred = nd.ErrCanceled, nd.CauseNone, 0
		s.cq.pushSRQ(res, s)
	}
	s.cq.evaluate()
	s.cq.mu.Unlock()
	for _, q := range cqs {
		q.detachSRQ(s, s.entries)
	}
	if s.ra != nil {
		s.ra.free()
	}
	s.a.p.unregisterSRQ(s.handle)
	s.a.mu.Lock()
	delete(s.a.srqs, s)
	s.a.mu.Unlock()
	return nil
}
