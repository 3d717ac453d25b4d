package engine

import (
	"sync"
	"sync/atomic"

	"github.com/godirect/nd"
	"github.com/godirect/nd/internal/ndrules"
)

type epState uint8

const (
	epIdle      epState = iota // created, not connected: only Receives
	epAccepting                // attached to a link: inbound data may arrive, posts wait for Ready
	epConnected                // data flows
	epEnded                    // flushed or disconnected: everything completes ErrCanceled
)

// Endpoint is one side of a connection (nd.Endpoint). Its methods are safe
// for concurrent use and never block on the peer.
//
// Outbound requests are issued to the transport one at a time and in post
// order by whichever goroutine finds the queue idle (see pump), and retired
// to the completion queue in post order whatever order they finish in.
type Endpoint struct {
	a           *Adapter
	c           *Connector
	inCQ, outCQ *CQ
	limits      nd.EndpointLimits
	inline      int

	mu            sync.Mutex
	state         epState
	link          Link
	ird, ord      int // negotiated read limits
	readsInFlight int
	sq, rq        workQueue
	// srq, when not nil, holds the endpoint's Receives instead of rq:
	// taken .. takenTail lists those its inbound Sends took, in order.
	srq              *SRQ
	taken, takenTail *WorkRequest
	onSharedReceive  func(*nd.Result) // OnSharedReceive's f
	pumping          bool
	// pumpDone wakes WaitTransmit's callers (pumpWaiters of them) when a
	// pump ends.
	pumpDone    sync.Cond
	pumpWaiters int
	// openAt is the adapter's count of Close calls when admitSlowLocked
	// last found the endpoint and what it uses open (none at first).
	openAt uint64

	// A teardown decided under mu and carried out after unlocking.
	closePending bool
	closeLink    Link
	closeStatus  nd.Status
	closeInbound bool // the end comes from the inbound Send being delivered (InboundCloser)

	// dead: Close (its own, its connector's, a queue's or the adapter's)
	// ran. Set under mu, read by every check, with mu or without.
	dead atomic.Bool
	// ended is set with state epEnded, for Ended.
	ended atomic.Bool

	// Cold, after the fields the data path reads: why the connection
	// ended, for the connector (reason.go), and the first access of the
	// peer this endpoint refused (noteRefused), for the reason of the end
	// it leads to.
	closeWhy endReason
	refused  atomic.Uint32
}

var _ nd.Endpoint = (*Endpoint)(nil)

// newEndpoint creates an endpoint that uses the queues in and out; it
// fails with ErrInvalidParameter1 or 2 if one of them is closed.
//
// With srq not nil the endpoint takes its Receives from srq (it fails with
// ErrInvalidParameter3 if srq is closed) and has no inbound queue of its
// own. op names the call in the errors.
func newEndpoint(op string, a *Adapter, c *Connector, in, out *CQ, srq *SRQ, limits nd.EndpointLimits) (*Endpoint, error) {
	ep := &Endpoint{
		a: a, c: c, inCQ: in, outCQ: out, limits: limits, inline: a.info.MaxInlineData,
		ird: limits.InboundReadLimit, ord: limits.OutboundReadLimit, srq: srq,
		openAt: ^uint64(0),
	}
	ep.pumpDone.L = &ep.mu
	ep.sq.init(limits.OutboundEntries, limits.OutboundSGE, ep.inline)
	if srq == nil {
		ep.rq.init(limits.InboundEntries, limits.InboundSGE, 0)
	}
	if !in.attach(ep) {
		return nil, ndrules.Arg(op, "inbound", nd.ErrInvalidParameter1, ndrules.NotOpenQueue)
	}
	if out != in && !out.attach(ep) {
		in.detach(ep)
		return nil, ndrules.Arg(op, "outbound", nd.ErrInvalidParameter2, ndrules.NotOpenQueue)
	}
	if srq != nil && !srq.attach(ep) {
		in.detach(ep)
		if out != in {
			out.detach(ep)
		}
		return nil, ndrules.Arg(op, "srq", nd.ErrInvalidParameter3, notOpenSRQ)
	}
	return ep, nil
}

// usable is the check a call on the endpoint makes first (the data-path
// posts make it only when their parameters fail, refusal, and otherwise
// decide under the lock, admitLocked): the status of a call on a closed
// endpoint (closedStatus), or Success.
func (ep *Endpoint) usable() nd.Status { return ep.a.closedStatus(ep.isClosed()) }

// isClosed reports whether the endpoint, its connector or one of its
// queues closed. The flags are set when each Close starts (before the
// endpoint itself is closed by the cascade), so that a call made after any
// of those Close calls returned is refused.
func (ep *Endpoint) isClosed() bool {
	return ep.dead.Load() || ep.c.shut.Load() || ep.inCQ.shut.Load() || ep.outCQ.shut.Load() ||
		(ep.srq != nil && ep.srq.isClosed())
}

// MaxInlineData implements nd.Endpoint.
func (ep *Endpoint) MaxInlineData() int { return ep.inline }

// OutboundEntries returns the depth of the endpoint's outbound queue (its
// limits do not change: safe for concurrent use).
func (ep *Endpoint) OutboundEntries() int { return ep.limits.OutboundEntries }

// StartRequestBatch implements nd.Endpoint; posts are issued at once, so it
// has nothing to do.
func (ep *Endpoint) StartRequestBatch() {}

// SubmitRequestBatch implements nd.Endpoint.
func (ep *Endpoint) SubmitRequestBatch() {}

// Send implements nd.Endpoint.
func (ep *Endpoint) Send(res *nd.Result, sgl []nd.SGE, flags nd.Flags) error {
	return ep.postOutbound(ndrules.Send, OpSend, res, sgl, flags, nd.MWDescriptor{}, 0)
}

// SendAndInvalidate implements nd.Endpoint.
func (ep *Endpoint) SendAndInvalidate(res *nd.Result, sgl []nd.SGE, remote nd.MWDescriptor, flags nd.Flags) error {
	return ep.postOutbound(ndrules.SendAndInvalidate, OpSendInvalidate, res, sgl, flags, remote, 0)
}

// Read implements nd.Endpoint.
func (ep *Endpoint) Read(res *nd.Result, sgl []nd.SGE, remote nd.MWDescriptor, offset uint64, flags nd.Flags) error {
	return ep.postOutbound(ndrules.Read, OpRead, res, sgl, flags, remote, offset)
}

// Write implements nd.Endpoint.
func (ep *Endpoint) Write(res *nd.Result, sgl []nd.SGE, remote nd.MWDescriptor, offset uint64, flags nd.Flags) error {
	return ep.postOutbound(ndrules.Write, OpWrite, res, sgl, flags, remote, offset)
}

// postOutbound checks and queues a Send, SendAndInvalidate, Read or Write.
func (ep *Endpoint) postOutbound(kind ndrules.Outbound, op Op, res *nd.Result, sgl []nd.SGE, flags nd.Flags, remote nd.MWDescriptor, offset uint64) error {
	lim := ndrules.PostLimits{MaxSGE: ep.limits.OutboundSGE, MaxLength: ep.a.info.MaxOutboundLength, MaxInline: ep.inline}
	total, st := ndrules.Post(kind, res, sgl, flags, lim)
	if st != nd.Success {
		return ep.refusal(st)
	}
	ep.mu.Lock()
	if err := ep.admitLocked(&ep.sq); err != nil {
		ep.mu.Unlock()
		return err
	}
	wr := ep.sq.reserve(op, res, flags)
	wr.Remote, wr.Offset, wr.Length = remote, offset, total
	ep.fillSGL(wr, sgl)
	if ep.state == epEnded {
		ep.finishLocked(&ep.sq, wr, nd.ErrCanceled)
		ep.unlock()
		return nil
	}
	ep.pumpLocked() // issue it now, unless a pump runs: that one issues it
	return nil
}

// refusal is the status of a post whose parameters failed their checks
// with st: the closed status (usable) if the endpoint can no longer be
// used, since a call on a closed object is refused before its parameters
// are looked at, st otherwise. The data-path posts check their parameters
// first and look at the closed flags only then, or under ep.mu
// (admitLocked), so that an accepted post reads them once.
func (ep *Endpoint) refusal(st nd.Status) error {
	if cst := ep.usable(); cst != nd.Success {
		return cst
	}
	return st
}

// admitLocked applies the checks every post shares: the endpoint and
// what it uses are open, it is connected (for an outbound request) and q
// has room. The common case is decided without isClosed's look at every
// object the endpoint uses: no Close of the adapter's objects returned
// since the endpoint was last found open (Adapter.closes; the adapter's
// own Close, whose second call returns before the first counted it, is
// its flag). Anything else is admitSlowLocked's.
func (ep *Endpoint) admitLocked(q *workQueue) error {
	if ep.state == epConnected && !q.full() && ep.a.closes.Load() == ep.openAt && !ep.a.closed.Load() {
		return nil
	}
	return ep.admitSlowLocked(q)
}

// admitSlowLocked is admitLocked's exact answer, in ND's order: closed,
// then not connected, then full.
func (ep *Endpoint) admitSlowLocked(q *workQueue) error {
	closes := ep.a.closes.Load() // before the flags: a Close counted later is seen then
	if st := ep.usable(); st != nd.Success {
		return st
	}
	ep.openAt = closes
	connected := ep.state != epIdle && ep.state != epAccepting
	return ndrules.Admit(q == &ep.sq, connected, q.full()).Err()
}

// fillSGL copies sgl into wr: registered entries are checked against their
// registration (a failure is reported when the request is processed), inline
// entries are copied into the request's own buffer. A Read cannot land in
// inline data: such an entry is a bad local entry, as in a Receive.
func (ep *Endpoint) fillSGL(wr *WorkRequest, sgl []nd.SGE) {
	used := 0
	for i := range sgl {
		e := wr.appendSGE(&sgl[i])
		if e.Region == nil && wr.Op == OpRead {
			if len(e.Buffer) > 0 {
				wr.status, wr.preset, wr.cause = nd.ErrAccessViolation, true, nd.CauseLocalAccess
			}
			e.Buffer = nil
		} else if e.Region == nil {
			n := copy(wr.inline[used:], e.Buffer)
			e.Buffer = wr.inline[used : used+n : used+n]
			used += n
		} else if !ownedBy(ep.a, e) {
			wr.status, wr.preset, wr.cause = nd.ErrAccessViolation, true, nd.CauseLocalAccess
		}
	}
	wr.SGL = wr.sge
}

// ownedBy reports whether e's buffer lies in a live registration of a.
// (A pointer: an entry is five words, copied for nothing by value.)
func ownedBy(a *Adapter, e *nd.SGE) bool {
	if e.Region == nil {
		return len(e.Buffer) == 0
	}
	r, ok := e.Region.(*Region)
	if !ok || r == nil || r.a != a || !r.registered.Load() {
		return false
	}
	_, ok = within(r.buf, e.Buffer)
	return ok
}

// stillRegistered reports whether every registered entry of wr is still
// registered.
func stillRegistered(wr *WorkRequest) bool {
	for i := range wr.SGL {
		if r, ok := wr.SGL[i].Region.(*Region); ok && !r.registered.Load() {
			return false
		}
	}
	return true
}

// Receive implements nd.Endpoint.
func (ep *Endpoint) Receive(res *nd.Result, sgl []nd.SGE) error {
	if ep.srq != nil && res != nil {
		return ep.refusal(nd.ErrInvalidDeviceRequest) // its Receives are posted to the shared queue
	}
	total, st := ndrules.Receive(res, sgl, ndrules.PostLimits{MaxSGE: ep.limits.InboundSGE, MaxLength: ep.a.info.MaxInboundLength})
	if st != nd.Success {
		return ep.refusal(st)
	}
	ep.mu.Lock()
	if err := ep.admitLocked(&ep.rq); err != nil {
		ep.mu.Unlock()
		return err
	}
	wr := ep.rq.reserve(OpReceive, res, 0)
	wr.Length = total
	wr.setReceiveSGL(ep.a, sgl)
	if ep.state == epEnded {
		ep.finishLocked(&ep.rq, wr, nd.ErrCanceled)
	}
	ep.unlock()
	return nil
}

// Bind implements nd.Endpoint. The window is bound when the call returns;
// the request's completion follows in order with the endpoint's other
// outbound requests.
func (ep *Endpoint) Bind(res *nd.Result, mr nd.MemoryRegion, mw nd.MemoryWindow, buf []byte, flags nd.Flags) (nd.MWDescriptor, error) {
	if st := ep.usable(); st != nd.Success {
		return nd.MWDescriptor{}, st
	}
	r, _ := mr.(*Region)
	regionOK := r != nil && r.a == ep.a && r.registered.Load()
	w, _ := mw.(*Window)
	windowOK := w != nil && w.a == ep.a && !w.isClosed()
	inRegion := false
	if regionOK {
		_, inRegion = within(r.buf, buf)
	}
	if st := ndrules.Bind(res, regionOK, windowOK, inRegion, flags); st != nd.Success {
		return nd.MWDescriptor{}, st
	}
	rights := flags & (nd.FlagAllowRead | nd.FlagAllowWrite)
	ep.mu.Lock()
	if err := ep.admitLocked(&ep.sq); err != nil {
		ep.mu.Unlock()
		return nd.MWDescriptor{}, err
	}
	wr := ep.sq.reserve(OpBind, res, flags)
	var desc nd.MWDescriptor
	ended := ep.state == epEnded
	if ended {
		ep.finishLocked(&ep.sq, wr, nd.ErrCanceled)
	} else {
		ep.a.windowMu.Lock()
		if w.bound || w.closed {
			wr.status, wr.preset = nd.ErrInvalidRequest, true
		} else {
			desc = ep.a.bindLocked(w, r, buf, rights, ep)
		}
		ep.a.windowMu.Unlock()
	}
	link := ep.link
	ep.unlock()
	if t, ok := link.(WindowTable); ok && desc.Token != 0 {
		t.WindowBound(desc.Token, desc.Base, buf, rights)
	}
	if !ended {
		ep.pump()
	}
	return desc, nil
}

// Invalidate implements nd.Endpoint.
func (ep *Endpoint) Invalidate(res *nd.Result, mw nd.MemoryWindow, flags nd.Flags) error {
	if st := ep.usable(); st != nd.Success {
		return st
	}
	w, _ := mw.(*Window)
	windowOK := w != nil && w.a == ep.a && !w.isClosed()
	if st := ndrules.Invalidate(res, windowOK, flags); st != nd.Success {
		return st
	}
	ep.mu.Lock()
	if err := ep.admitLocked(&ep.sq); err != nil {
		ep.mu.Unlock()
		return err
	}
	wr := ep.sq.reserve(OpInvalidate, res, flags)
	wr.window = w
	if ep.state == epEnded {
		ep.finishLocked(&ep.sq, wr, nd.ErrCanceled)
		ep.unlock()
		return nil
	}
	ep.pumpLocked() // issue it now, unless a pump runs: that one issues it
	return nil
}

// invalidateLocal unbinds w if it is bound to ep, for the Invalidate wr.
// It reports false when the Invalidate completes later, at the release of
// the window's last hold (hold.go).
func (ep *Endpoint) invalidateLocal(w *Window, wr *WorkRequest) (bool, nd.Status) {
	ep.a.windowMu.Lock()
	if !w.bound || w.ep != ep {
		ep.a.windowMu.Unlock()
		return true, nd.ErrInvalidationError
	}
	u := ep.a.unbindLocked(w)
	now := w.waitHoldsLocked(ep, wr)
	ep.a.windowMu.Unlock()
	u.publish()
	return now, nd.Success
}

// Flush implements nd.Endpoint.
func (ep *Endpoint) Flush() error {
	if st := ep.usable(); st != nd.Success {
		return st
	}
	ep.terminate(nd.ErrCanceled, byThisSide("Flush"))
	return nil
}

// Close implements nd.Endpoint.
func (ep *Endpoint) Close() error {
	ep.close(nd.ErrCanceled)
	return nil
}

// close closes the endpoint: the connection ends with status st (Success:
// gracefully), every request accepted and not completed completes
// ErrCanceled, later calls return closedStatus, and the connector may make
// a new endpoint. It is idempotent. The connection's end counts as this
// side's Close.
func (ep *Endpoint) close(st nd.Status) {
	ep.mu.Lock()
	if ep.dead.Load() {
		ep.mu.Unlock()
		return
	}
	// One critical section: a post either came before (it is flushed or
	// owned by the link, which completes it when it closes) or sees closed.
	ep.dead.Store(true)
	ep.a.closes.Add(1)
	ep.endLocked(st, byThisSide("Close"))
	ep.unlock()
	ep.inCQ.detach(ep)
	if ep.outCQ != ep.inCQ {
		ep.outCQ.detach(ep)
	}
	if ep.srq != nil {
		ep.srq.detach(ep)
	}
	ep.c.endpointClosed(ep)
}
