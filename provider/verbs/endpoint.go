//go:build verbs && linux

package verbs

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/godirect/nd"
	"github.com/godirect/nd/internal/ndrules"
)

// endpoint is an ND endpoint: an RC queue pair, created when the connection
// is made (Receives posted before wait in C memory and go to the device
// then), with a ring of request records per direction.
type endpoint struct {
	a     *Adapter
	c     *connector
	in    *cq
	out   *cq
	lim   nd.EndpointLimits
	srq   *srq // the shared receive queue its Receives come from, or nil
	sq    *ring
	rq    *ring
	split int // SGEs per Read work request (the device's max_sge_rd)

	// Inline data is copied into a registered C buffer, one slot of
	// MaxInlineData bytes per send record.
	staging    unsafe.Pointer
	stagingMR  cMR
	stagingKey uint32
	inline     int

	dead      atomic.Bool // the connection ended: new requests complete ErrCanceled
	connected atomic.Bool
	termOnce  sync.Once

	closeOnce sync.Once // Close runs once; concurrent callers wait for it

	mu       sync.Mutex // posting
	closing  bool       // Close started: posts are refused
	closed   bool
	qp       cQP
	qpn      uint32
	qpInline int
	ord      int // negotiated outbound Read limit (the application's)
	// confirmWrites: a zero-length Read follows every Write (the peer is
	// provider/tcp; see post.go's Write).
	confirmWrites bool
	sa            *sendArea
	ra            *recvArea
	batch         int

	wmu     sync.Mutex
	windows map[*window]struct{}
}

var _ nd.Endpoint = (*endpoint)(nil)

// newEndpoint makes the endpoint of CreateEndpoint or, with s,
// CreateEndpointWithSRQ (op).
func newEndpoint(op string, c *connector, in, out *cq, s *srq, l nd.EndpointLimits) (*endpoint, error) {
	a := c.a
	if s != nil {
		l.InboundEntries, l.InboundSGE = 0, 0 // the shared queue's limits apply
	}
	e := &endpoint{a: a, c: c, in: in, out: out, srq: s, lim: l, split: max(1, min(a.dev.maxSGERd, a.dev.maxSGE)),
		inline: a.info.MaxInlineData, windows: map[*window]struct{}{}}
	a.mu.Lock()
	a.nextEP++
	h := uint64(a.nextEP)
	a.mu.Unlock()
	e.sq = newRing(e, out, h<<1, l.OutboundEntries, false)
	e.rq = newRing(e, in, h<<1|1, l.InboundEntries, true)
	perRead := e.perRead()
	if l.OutboundEntries*perRead > a.dev.maxQPWR {
		return nil, ndrules.Arg(op, "limits.OutboundEntries", nd.ErrInvalidParameter4, fmt.Sprintf("%d requests of %d work requests each are more than the device's %d", l.OutboundEntries, perRead, a.dev.maxQPWR))
	}
	if err := out.attach(op, e.sq, l.OutboundEntries*perRead); err != nil {
		return nil, err
	}
	if err := in.attach(op, e.rq, l.InboundEntries); err != nil {
		out.detach(e.sq, l.OutboundEntries*perRead)
		return nil, err
	}
	if s != nil {
		if err := s.attachEndpoint(e); err != nil {
			out.detach(e.sq, l.OutboundEntries*perRead)
			in.detach(e.rq, l.InboundEntries)
			return nil, err
		}
	}
	e.sa = newSendArea(l.OutboundEntries*perRead, min(max(l.OutboundSGE, 1), a.dev.maxSGE))
	e.ra = newRecvArea(l.InboundEntries, max(l.InboundSGE, 1))
	if e.inline > 0 {
		n := e.inline * l.OutboundEntries
		e.staging = cMalloc(n)
		mr, lkey, _, err := regMR(a.pd, e.staging, n, accLocalWrite)
		if err != nil {
			e.release()
			return nil, &nd.OpError{Op: "CreateEndpoint", Status: nd.ErrInsufficientResources, Err: err}
		}
		e.stagingMR, e.stagingKey = mr, lkey
	}
	return e, nil
}

func (e *endpoint) perRead() int {
	n := (max(e.lim.OutboundSGE, 1) + e.split - 1) / e.split
	if e.a.dev.iwarp {
		n = max(n, 2) // a Write and its confirming Read
	}
	return n
}

// release frees what newEndpoint allocated (no queue pair yet).
func (e *endpoint) release() {
	e.out.detach(e.sq, e.lim.OutboundEntries*e.perRead())
	e.in.detach(e.rq, e.lim.InboundEntries)
	if e.stagingMR != nil {
		deregMR(e.stagingMR)
	}
	if e.staging != nil {
		cFree(e.staging)
	}
	e.sa.free()
	e.ra.free()
	if e.srq != nil {
		e.srq.detachEndpoint(e, e.qpn)
	}
}

// errEndpointUsed is why an endpoint cannot take a connection.
var errEndpointUsed = errors.New("the endpoint closed, or its connection ended or was made")

// attach creates the queue pair for the rdma_cm id and posts the Receives
// that waited for it.
func (e *endpoint) attach(id cID) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closing || e.qp != nil || e.dead.Load() {
		return &nd.OpError{Op: "Connect", Status: nd.ErrInvalidDeviceState, Err: errEndpointUsed}
	}
	var hwSRQ cSRQ
	if e.srq != nil {
		e.srq.mu.Lock()
		hwSRQ = e.srq.hw
		e.srq.mu.Unlock()
		if hwSRQ == nil {
			return &nd.OpError{Op: "Connect", Status: nd.ErrInvalidDeviceState}
		}
	}
	qp, qpn, inl, err := createQP(e.a.pd, e.out.hw, e.in.hw, hwSRQ, e.lim.OutboundEntries*e.perRead(), e.lim.InboundEntries,
		min(max(e.lim.OutboundSGE, 1), e.a.dev.maxSGE), max(e.lim.InboundSGE, 1), e.a.dev.maxInline)
	if err != nil {
		return &nd.OpError{Op: "Connect", Status: nd.ErrInsufficientResources, Err: fmt.Errorf("ibv_create_qp: %w", err)}
	}
	if err := qpModify(id, qp, qpsInit, -1, -1); err != nil {
		destroyQP(qp)
		return &nd.OpError{Op: "Connect", Status: nd.ErrInsufficientResources, Err: fmt.Errorf("moving the queue pair to INIT: %w", err)}
	}
	e.qp, e.qpn, e.qpInline = qp, qpn, inl
	if e.srq != nil {
		e.srq.bindQP(e, qpn)
	}
	if e.batch == 0 {
		e.flushRecvLocked()
	}
	return nil
}

// toRTS moves the queue pair to RTS (InfiniBand and RoCE; iWARP's
// connection manager does it itself).
func (e *endpoint) toRTS(id cID, ord, ird int) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.qp == nil {
		return nd.ErrInvalidDeviceState
	}
	if err := qpModify(id, e.qp, qpsRTR, -1, ird); err != nil {
		return err
	}
	return qpModify(id, e.qp, qpsRTS, ord, -1)
}

func (e *endpoint) destroyQP() {
	e.dead.Store(true)
	e.mu.Lock()
	qp := e.qp
	e.qp = nil
	e.mu.Unlock()
	if qp != nil {
		qpError(qp)
		e.cancelAll()
		destroyQP(qp)
	}
}

// cancelAll completes what is still outstanding with ErrCanceled.
func (e *endpoint) cancelAll() {
	for _, r := range []*ring{e.rq, e.sq} {
		r.q.mu.Lock()
		if !r.q.closed {
			r.q.drain()
		}
		r.cancelAll()
		r.q.evaluate()
		r.q.mu.Unlock()
	}
}

// terminate ends the connection after an error, a Flush or the peer's
// disconnect: the queue pair flushes, windows are unbound, the connector
// learns it, and whatever the device does not complete is canceled.
func (e *endpoint) terminate() {
	e.dead.Store(true)
	e.termOnce.Do(func() {
		e.mu.Lock()
		qp := e.qp
		e.ra.n = 0 // Receives that never reached the device
		e.mu.Unlock()
		if qp != nil {
			qpError(qp)
		}
		e.unbindAll()
		e.c.connectionEnded(e)
		e.in.kick()
		e.out.kick()
		e.cancelAll()
	})
}

// post helpers -------------------------------------------------------------

// localCheck is the completion status of a scatter/gather list whose sizes
// ndrules checked: ErrAccessViolation for an entry outside its
// registration. A sink (Receive, Read) has no inline data: such an entry is
// a bad local entry.
func (e *endpoint) localCheck(sgl []nd.SGE, sink bool) nd.Status {
	st := nd.Success
	for i := range sgl {
		s := &sgl[i]
		if s.Region == nil {
			if sink && len(s.Buffer) > 0 {
				st = nd.ErrAccessViolation // inline data cannot receive
			}
			continue
		}
		r, ok := s.Region.(*memRegion)
		if !ok || r.a != e.a || r.dereg.Load() {
			st = nd.ErrAccessViolation
			continue
		}
		if len(s.Buffer) > 0 && !r.contains(s.Buffer) {
			st = nd.ErrAccessViolation
		}
	}
	return st
}

// fail completes x with st in software and ends the connection (q.mu held).
func (e *endpoint) fail(r *ring, x *rec, st nd.Status) {
	e.dead.Store(true)
	r.finish(x, st)
	r.q.evaluate()
	go e.terminate()
}

// isClosed reports whether the endpoint, its connector or one of its queues
// closed: a post is then refused (docs/semantics.md, "Closing objects").
func (e *endpoint) isClosed() bool {
	return e.closing || e.c.shut.Load() || e.in.shut.Load() || e.out.shut.Load() || e.srq != nil && e.srq.cq.shut.Load()
}

// admit is the connection check of an outbound post (e.mu held): refused
// before the connection is up, accepted (to complete ErrCanceled) after it
// ended.
func (e *endpoint) admit() nd.Status {
	return ndrules.Admit(true, e.connected.Load() || e.dead.Load(), false)
}

// Send implements nd.Endpoint.
func (e *endpoint) Send(res *nd.Result, sgl []nd.SGE, flags nd.Flags) error {
	return e.postOut(ndrules.Send, res, sgl, flags, opSend, nd.MWDescriptor{}, 0)
}

// SendAndInvalidate implements nd.Endpoint.
func (e *endpoint) SendAndInvalidate(res *nd.Result, sgl []nd.SGE, remote nd.MWDescriptor, flags nd.Flags) error {
	return e.postOut(ndrules.SendAndInvalidate, res, sgl, flags, opSendInv, remote, 0)
}

// Read implements nd.Endpoint.
func (e *endpoint) Read(res *nd.Result, sgl []nd.SGE, remote nd.MWDescriptor, offset uint64, flags nd.Flags) error {
	return e.postOut(ndrules.Read, res, sgl, flags, opRead, remote, offset)
}

// Write implements nd.Endpoint.
func (e *endpoint) Write(res *nd.Result, sgl []nd.SGE, remote nd.MWDescriptor, offset uint64, flags nd.Flags) error {
	return e.postOut(ndrules.Write, res, sgl, flags, opWrite, remote, offset)
}

// postOut posts an outbound request of kind, device opcode op: it checks
// it, reserves its record, and adds its work requests to the send area,
// which goes to the device now unless a batch is open. It takes e.mu, and
// the queue's mu while it reserves.
func (e *endpoint) postOut(kind ndrules.Outbound, res *nd.Result, sgl []nd.SGE, flags nd.Flags, op int, remote nd.MWDescriptor, offset uint64) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if err := e.a.closedErr(e.isClosed()); err != nil {
		return err
	}
	lim := ndrules.PostLimits{MaxSGE: e.lim.OutboundSGE, MaxLength: e.a.info.MaxOutboundLength, MaxInline: e.inline}
	total, st := ndrules.Post(kind, res, sgl, flags, lim)
	if st == nd.Success {
		st = e.admit()
	}
	if st != nd.Success {
		return st
	}
	bad := e.localCheck(sgl, op == opRead)
	r := e.sq
	q := r.q
	q.mu.Lock()
	x := r.reserve(res, flags&nd.FlagSilentSuccess != 0, total)
	if x == nil {
		q.mu.Unlock()
		return nd.ErrNoMoreEntries
	}
	if e.completeEarly(r, x, bad, op) {
		q.mu.Unlock()
		return nil
	}
	seq := x.seq
	nsge, parts, confirm := e.outParts(sgl, op)
	x.parts = parts
	q.mu.Unlock()

	if e.sa.n+parts > e.sa.cap {
		e.flushSendLocked()
	}
	wf := e.wrFlags(flags, op)
	wrID := r.wrID(seq)
	raddr := remote.Base + offset
	if op == opRead {
		e.addReadLocked(wrID, wf, raddr, remote.Token, sgl, nsge, parts)
	} else {
		i := e.sa.add(wrID, op, wf, raddr, remote.Token, remote.Token)
		e.addSGEsLocked(i, sgl, seq)
		if total > 0 && total <= e.qpInline && op != opRead {
			e.sa.orFlags(i, sendInline)
		}
		if confirm {
			e.zeroLengthSGE(e.sa.add(wrID, opRead, sendSignaled, 0, 1, 0))
		}
	}
	if e.batch == 0 {
		e.flushSendLocked()
	}
	return nil
}

// completeEarly completes the reserved request x in software, and reports
// true, when it cannot go to the device: with ErrCanceled once the
// connection ended or has no queue pair; with bad (an entry outside its
// registration) or ErrInvalidRequest (a Read where no Read is allowed),
// ending the connection. e.mu and r.q.mu held.
func (e *endpoint) completeEarly(r *ring, x *rec, bad nd.Status, op int) bool {
	switch {
	case e.dead.Load() || e.qp == nil:
		r.finish(x, nd.ErrCanceled)
		r.q.evaluate()
		return true
	case bad != nd.Success:
		e.fail(r, x, bad)
		return true
	case op == opRead && e.ord == 0:
		e.fail(r, x, nd.ErrInvalidRequest)
		return true
	}
	return false
}

// outParts returns the non-empty entries of the outbound request sgl of
// op, the device work requests it takes (parts), and whether a Read
// confirms it (a Write to provider/tcp over iWARP). e.mu held.
func (e *endpoint) outParts(sgl []nd.SGE, op int) (nsge, parts int, confirm bool) {
	for i := range sgl {
		if len(sgl[i].Buffer) > 0 {
			nsge++
		}
	}
	parts = 1
	if op == opRead && nsge > e.split {
		parts = (nsge + e.split - 1) / e.split
	}
	confirm = op == opWrite && e.confirmWrites
	if confirm {
		// iWARP completes a Write when it is handed to TCP; a zero-length
		// Read behind it completes only after the peer placed it (Read
		// Requests are served in order), as provider/tcp confirms. It uses
		// the Read slot announced on top of the application's limit. Only
		// provider/tcp is asked: siw may answer a zero-length Read with
		// the stale payload of the response it sent before, which its own
		// initiator then refuses (docs/verbs.md).
		parts = 2
	}
	return nsge, parts, confirm
}

// wrFlags returns the send flags of the work requests of an outbound
// request of op with flags.
func (e *endpoint) wrFlags(flags nd.Flags, op int) int {
	wf := sendSignaled
	if flags&nd.FlagReadFence != 0 && !(op == opRead && e.a.dev.iwarp) {
		wf |= sendFence // siw refuses fenced Reads
	}
	if flags&nd.FlagSendAndSolicitEvent != 0 && (op == opSend || op == opSendInv) {
		wf |= sendSolicited
	}
	return wf
}

// addReadLocked adds the Read of sgl's nsge non-empty entries from raddr
// of window token to the send area: parts work requests of at most
// e.split entries each, each reading the remote bytes after the one
// before. e.mu held.
func (e *endpoint) addReadLocked(wrID uint64, wf int, raddr uint64, token uint32, sgl []nd.SGE, nsge, parts int) {
	k := 0
	for p := 0; p < parts; p++ {
		i := e.sa.add(wrID, opRead, wf, raddr, token, 0)
		if nsge == 0 {
			e.zeroLengthSGE(i)
		}
		for n := 0; n < e.split && k < len(sgl); k++ {
			b := sgl[k].Buffer
			if len(b) == 0 {
				continue
			}
			e.sa.addSGE(i, addrOf(b), len(b), sgl[k].Region.(*memRegion).lkey)
			raddr += uint64(len(b))
			n++
		}
	}
}

// addSGEsLocked adds sgl's non-empty entries to the Send or Write work
// request i of request seq: a registered entry as it is, an inline one (no
// region) copied into the request's slot of the staging buffer. e.mu held.
func (e *endpoint) addSGEsLocked(i int, sgl []nd.SGE, seq uint32) {
	off := 0
	var slot unsafe.Pointer
	if e.staging != nil {
		slot = unsafe.Add(e.staging, int(seq)%e.lim.OutboundEntries*e.inline)
	}
	for k := range sgl {
		b := sgl[k].Buffer
		if len(b) == 0 {
			continue
		}
		if sgl[k].Region == nil {
			dst := unsafe.Add(slot, off)
			copy(unsafe.Slice((*byte)(dst), len(b)), b)
			e.sa.addSGE(i, uintptr(dst), len(b), e.stagingKey)
			off += len(b)
			continue
		}
		e.sa.addSGE(i, addrOf(b), len(b), sgl[k].Region.(*memRegion).lkey)
	}
}

// zeroLengthSGE gives the zero-length Read i an explicit empty SGE. siw
// takes a Read's size from the first SGE of its send-queue slot, which a
// Read without SGEs leaves as the slot's previous request wrote it: such a
// Read would ask the peer for the bytes of an older request.
func (e *endpoint) zeroLengthSGE(i int) {
	if e.staging != nil {
		e.sa.addSGE(i, uintptr(e.staging), 0, e.stagingKey)
	}
}

// Receive implements nd.Endpoint.
func (e *endpoint) Receive(res *nd.Result, sgl []nd.SGE) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if err := e.a.closedErr(e.isClosed()); err != nil {
		return err
	}
	if e.srq != nil && res != nil {
		return nd.ErrInvalidDeviceRequest // its Receives go to the shared queue
	}
	total, st := ndrules.Receive(res, sgl, ndrules.PostLimits{MaxSGE: e.lim.InboundSGE, MaxLength: e.a.info.MaxInboundLength})
	if st != nd.Success {
		return st
	}
	bad := e.localCheck(sgl, true)
	r := e.rq
	q := r.q
	q.mu.Lock()
	x := r.reserve(res, false, 0)
	if x == nil {
		q.mu.Unlock()
		return nd.ErrNoMoreEntries
	}
	if e.dead.Load() {
		r.finish(x, nd.ErrCanceled)
		q.evaluate()
		q.mu.Unlock()
		return nil
	}
	if bad != nd.Success {
		if e.qp == nil {
			// Not connected: the failure is reported, and there is no
			// connection to end yet.
			r.finish(x, bad)
			q.evaluate()
		} else {
			e.fail(r, x, bad)
		}
		q.mu.Unlock()
		return nil
	}
	seq := x.seq
	q.mu.Unlock()
	if e.ra.n == e.ra.cap {
		e.flushRecvLocked()
	}
	i := e.ra.add(r.wrID(seq))
	for k := range sgl {
		if b := sgl[k].Buffer; len(b) > 0 {
			e.ra.addSGE(i, addrOf(b), len(b), sgl[k].Region.(*memRegion).lkey)
		}
	}
	if total == 0 {
		// siw fails Receives without entries: give it one of 0 bytes.
		e.ra.addSGE(i, uintptr(e.a.dummy), 0, e.a.dumKey)
	}
	if e.batch == 0 {
		e.flushRecvLocked()
	}
	return nil
}

func (e *endpoint) flushSendLocked() {
	if e.qp == nil {
		e.sa.n = 0
		return
	}
	if _, err := e.sa.post(e.qp); err != nil {
		go e.terminate()
	}
}

func (e *endpoint) flushRecvLocked() {
	if e.qp == nil {
		return // kept until the queue pair exists
	}
	if _, err := e.ra.post(e.qp); err != nil {
		go e.terminate()
	}
}

// Flush implements nd.Endpoint.
func (e *endpoint) Flush() error {
	e.mu.Lock()
	err := e.a.closedErr(e.isClosed())
	e.mu.Unlock()
	if err != nil {
		return err
	}
	e.terminate()
	return nil
}

// StartRequestBatch implements nd.Endpoint: posts are gathered until
// SubmitRequestBatch and reach the device with one call per direction.
func (e *endpoint) StartRequestBatch() {
	e.mu.Lock()
	e.batch++
	e.mu.Unlock()
}

// SubmitRequestBatch implements nd.Endpoint.
func (e *endpoint) SubmitRequestBatch() {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.batch > 0 {
		e.batch--
	}
	if e.batch == 0 {
		e.flushSendLocked()
		e.flushRecvLocked()
	}
}

// MaxInlineData implements nd.Endpoint.
func (e *endpoint) MaxInlineData() int { return e.inline }

// Close implements nd.Endpoint. It may be called concurrently (by the
// application, the endpoint's connector, its queues and its adapter): the
// first call closes, the others wait for it.
func (e *endpoint) Close() error {
	e.closeOnce.Do(func() {
		e.mu.Lock()
		e.closing = true
		e.mu.Unlock()
		e.terminate()
		e.destroyQP()
		e.mu.Lock()
		e.closed = true
		e.mu.Unlock()
		e.c.endpointClosed(e)
		e.release()
		e.a.mu.Lock()
		delete(e.a.eps, e)
		e.a.mu.Unlock()
	})
	return nil
}

func addrOf(b []byte) uintptr { return uintptr(unsafe.Pointer(unsafe.SliceData(b))) }
