package loop

import (
	"net/netip"
	"sync"

	"github.com/godirect/nd"
	"github.com/godirect/nd/internal/engine"
)

// pair is one in-process connection: two ends that reach each other's
// engine directly.
type pair struct {
	net  *network
	port netip.AddrPort // the active side's local port, released on close

	mu       sync.Mutex
	closed   bool
	released bool
	ends     [2]end
}

// end is one side of a pair; it implements engine.Link.
type end struct {
	p             *pair
	side          int
	local, remote netip.AddrPort
	events        engine.LinkEvents // guarded by p.mu
	ep            *engine.Endpoint  // guarded by p.mu
}

func (p *pair) release() {
	p.net.mu.Lock()
	if !p.released {
		p.released = true
		delete(p.net.connPorts, p.port)
	}
	p.net.mu.Unlock()
}

func (e *end) peer() *end { return &e.p.ends[1-e.side] }

// peerEvents returns the peer's event sink, or nil once the pair closed.
func (e *end) peerEvents() engine.LinkEvents {
	e.p.mu.Lock()
	defer e.p.mu.Unlock()
	if e.p.closed {
		return nil
	}
	return e.peer().events
}

func (e *end) LocalAddr() netip.AddrPort  { return e.local }
func (e *end) RemoteAddr() netip.AddrPort { return e.remote }

func (e *end) Accept(ird, ord int, privateData []byte) error {
	ev := e.peerEvents()
	if ev == nil {
		return nd.ErrConnectionAborted
	}
	ev.Accepted(ird, ord, privateData)
	return nil
}

func (e *end) Reject(privateData []byte) error {
	ev := e.peerEvents()
	if ev == nil {
		return nd.ErrConnectionAborted
	}
	ev.Rejected(privateData)
	return nil
}

func (e *end) Ready() error {
	ev := e.peerEvents()
	if ev == nil {
		return nd.ErrConnectionAborted
	}
	ev.Ready()
	return nil
}

func (e *end) Attach(ep *engine.Endpoint) {
	e.p.mu.Lock()
	e.ep = ep
	e.p.mu.Unlock()
}

func (e *end) Close(status nd.Status) {
	e.p.mu.Lock()
	if e.p.closed {
		e.p.mu.Unlock()
		return
	}
	e.p.closed = true
	ev := e.peer().events
	e.p.mu.Unlock()
	e.p.release()
	if ev != nil {
		ev.Closed(status)
	}
}

// Transmit moves one request straight into the peer's memory: a Send into
// the peer's oldest Receive, a Write into and a Read out of the peer's
// window, each with one copy, after the peer's engine checked the access.
func (e *end) Transmit(wr *engine.WorkRequest) (bool, nd.Status) {
	e.p.mu.Lock()
	closed, peer := e.p.closed, e.peer().ep
	e.p.mu.Unlock()
	if closed || peer == nil {
		return true, nd.ErrCanceled
	}
	switch wr.Op {
	case engine.OpSend, engine.OpSendInvalidate:
		rr, st := peer.TakeReceive(wr.Length)
		if st != nd.Success {
			return true, st
		}
		n := engine.Transfer(rr.SGL, wr.SGL)
		rst := nd.Success
		if wr.Op == engine.OpSendInvalidate {
			rst = peer.InvalidateWindow(wr.Remote.Token)
		}
		peer.CompleteReceive(rr, n, rst, wr.Flags&nd.FlagSendAndSolicitEvent != 0)
		if rst != nd.Success {
			return true, nd.ErrRemoteError
		}
		return true, nd.Success
	case engine.OpWrite, engine.OpRead:
		addr := wr.Remote.Base + wr.Offset
		if addr < wr.Remote.Base {
			return true, nd.ErrAccessViolation
		}
		// The hold keeps an Invalidate of the window from completing
		// while the bytes move.
		mem, hold, f := peer.HoldAccess(wr.Remote.Token, addr, wr.Length, wr.Op == engine.OpWrite)
		if f != engine.FaultNone {
			if peer.Ended() {
				return true, nd.ErrCanceled // the peer's connection ended as this request reached it
			}
			return true, nd.ErrAccessViolation
		}
		if wr.Op == engine.OpWrite {
			engine.GatherInOrder(mem, wr.SGL)
		} else {
			engine.Scatter(wr.SGL, mem)
		}
		hold.Release()
		return true, nd.Success
	}
	return true, nd.ErrInvalidRequest
}
