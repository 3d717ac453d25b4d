package engine

import (
	"github.com/godirect/nd"
	"github.com/godirect/nd/internal/ndrules"
)

// What ND v2's interface needs beyond nd's (ND v1's) shape, for the
// provider DLL's ND v2 objects (internal/ndexport). ND v2 makes a queue pair
// apart from any connector and connects it through whichever connector the
// consumer names: the DLL gives each queue pair an endpoint on a connector
// of its own, offers the read limits that ND v2 passes to Connect and Accept
// (SetReadLimits), and moves a connection request that arrived on the
// consumer's connector to the queue pair's (HandOver) before accepting it.

// SetReadLimits sets the read limits the endpoint offers when its
// connector next connects or accepts: ird Reads the peer may have in flight
// toward it and ord Reads it may have in flight, 0 to the adapter's
// MaxInboundReadLimit and MaxOutboundReadLimit (else ErrInvalidParameter1
// or 2). The negotiation then goes as with the limits of CreateEndpoint.
// ErrConnectionActive once the connector is connecting or connected.
func (ep *Endpoint) SetReadLimits(ird, ord int) error {
	switch {
	case ird < 0 || ird > ep.a.info.MaxInboundReadLimit:
		return nd.ErrInvalidParameter1
	case ord < 0 || ord > ep.a.info.MaxOutboundReadLimit:
		return nd.ErrInvalidParameter2
	}
	c := ep.c
	c.mu.Lock()
	defer c.mu.Unlock()
	if st := c.a.closedStatus(c.closed); st != nd.Success {
		return st
	}
	if c.state != ndrules.Idle && c.state != ndrules.Requested {
		return nd.ErrConnectionActive
	}
	ep.limits.InboundReadLimit, ep.limits.OutboundReadLimit = ird, ord
	return nil
}

// SetBacklog bounds the requests that wait for GetConnectionRequest to n
// (0: no bound) from now on, as ND v2's IND2Listener::Listen(backlog)
// does after Bind took the port: requests beyond it are refused;
// requests already waiting stay. A negative n is ErrInvalidParameter1.
func (l *Listener) SetBacklog(n int) error {
	if n < 0 {
		return nd.ErrInvalidParameter1
	}
	l.mu.Lock()
	l.backlog = n
	l.mu.Unlock()
	return nil
}

// HandOver moves the connection request that GetConnectionRequest bound to
// c, not yet accepted or rejected, to dst: an idle connector of the same
// adapter, whose endpoint then accepts it. Afterwards c is idle again and
// GetConnectionData, Accept and Reject of the request are dst's. It returns
// ErrInvalidParameter1 for a dst that is nil, c itself or of another
// adapter, ErrConnectionActive when dst is not idle, ErrConnectionAborted
// when the peer abandoned the request, and ErrConnectionInvalid when c holds
// no request.
func (c *Connector) HandOver(dst *Connector) error {
	if dst == nil || dst == c || dst.a != c.a {
		return nd.ErrInvalidParameter1
	}
	dst.mu.Lock()
	idle := !dst.closed && dst.state == ndrules.Idle && dst.cur == nil && dst.waitingOn == nil
	dst.mu.Unlock()
	if !idle {
		return nd.ErrConnectionActive
	}
	c.mu.Lock()
	if st := c.a.closedStatus(c.closed); st != nd.Success {
		c.mu.Unlock()
		return st
	}
	t, state := c.cur, c.state
	c.mu.Unlock()
	switch state {
	case ndrules.Requested:
	case ndrules.Aborted:
		return nd.ErrConnectionAborted
	default:
		return nd.ErrConnectionInvalid
	}
	// Take the attempt from c first: a link event that comes meanwhile
	// finds no owner and is kept in t (aborted) for bind to apply.
	t.mu.Lock()
	if t.c != c {
		t.mu.Unlock()
		return nd.ErrConnectionInvalid
	}
	t.c = nil
	t.mu.Unlock()
	c.mu.Lock()
	if c.cur == t {
		c.state, c.cur, c.link, c.havePeer = ndrules.Idle, nil, nil, false
		c.peerIRD, c.peerORD, c.peerData = 0, 0, nil
		c.signalLocked()
	}
	c.mu.Unlock()
	if !bind(t, dst) {
		// dst closed meanwhile: nobody will accept the request.
		t.link.Reject(nil)
		t.link.Close(nd.ErrConnectionRefused)
		return &nd.OpError{Op: "HandOver", Status: nd.ErrCanceled}
	}
	return nil
}

// Modify changes the queue's depth (entries, 0 leaves it) and low-water
// mark (threshold, 0 leaves it), as ND v2's IND2SharedReceiveQueue::Modify
// does. A depth below the Receives posted and not yet reaped is
// ErrBufferOverflow (the queue is left as it was), one beyond
// MaxSharedReceiveQueueDepth ErrInvalidParameter1, a threshold beyond the
// depth ErrInvalidParameter2. Lowering the threshold below the Receives
// waiting fires Notify. After Close, as Receive.
func (s *SRQ) Modify(entries, threshold int) error {
	if st := s.usable(); st != nd.Success {
		return st
	}
	if entries < 0 || entries > MaxSharedReceiveQueueDepth {
		return nd.ErrInvalidParameter1
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if st := s.a.closedStatus(s.closed || s.isClosed()); st != nd.Success {
		return st
	}
	depth := s.limits.Entries
	if entries > 0 {
		depth = entries
	}
	th := s.limits.NotifyThreshold
	if threshold > 0 {
		th = threshold
	}
	if th > depth || threshold < 0 {
		return nd.ErrInvalidParameter2
	}
	if depth < s.outstanding.inUse() {
		return nd.ErrBufferOverflow
	}
	if depth > len(s.posted) {
		s.growLocked(depth)
	}
	s.limits.Entries, s.limits.NotifyThreshold = depth, th
	if s.fired != nil && s.n < th {
		close(s.fired)
		s.fired = nil
	}
	return nil
}

// growLocked makes room for depth Receives: new entries join the free list
// (the existing ones stay where they are, since endpoints hold the ones
// they took), and the ring of posted Receives is laid out anew, oldest
// first.
func (s *SRQ) growLocked(depth int) {
	more := depth - len(s.posted)
	wrs := make([]WorkRequest, more)
	sges := make([]nd.SGE, more*s.limits.SGE)
	for i := range wrs {
		wrs[i].sge = sges[i*s.limits.SGE : i*s.limits.SGE : (i+1)*s.limits.SGE]
		s.free = append(s.free, &wrs[i])
	}
	posted := make([]*WorkRequest, depth)
	for i := range s.n {
		posted[i] = s.posted[(s.head+i)%len(s.posted)]
	}
	s.posted, s.head = posted, 0
}

// Bound is the number of memory windows and remote accesses bound inside
// the region now (DeregisterMemory returns ErrDeviceBusy while it is not
// 0).
func (r *Region) Bound() int { return int(r.windows.Load()) }

// OnSharedReceive sets f to be called with the Result of each Receive the
// endpoint takes from its shared receive queue, under the endpoint's lock,
// before the Receive's completion is queued: ND v2 reports the queue pair
// that consumed a shared Receive, which the Result alone does not say. Set
// it before the endpoint connects.
func (ep *Endpoint) OnSharedReceive(f func(res *nd.Result)) {
	ep.mu.Lock()
	ep.onSharedReceive = f
	ep.mu.Unlock()
}
