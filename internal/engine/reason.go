package engine

import (
	"github.com/godirect/nd"
	"github.com/godirect/nd/internal/ndrules"
)

// Why a connection ended (nd.DisconnectReason): the first of the ends that
// reach an endpoint (endLocked) is kept, and its connector reports it once
// the connection counts as ended. An end the transport reports (the peer's
// close, Terminate, a request it canceled) is the peer's, unless this side
// refused one of the peer's accesses before: the engine notes that refusal
// where it decides it (accessLocked), so that the target of a refused Read
// or Write says why without its transport's help.

// endReason is why a connection ended.
type endReason struct {
	peer   bool
	op     string
	st     nd.Status
	cause  nd.Cause
	detail string
}

// err is the reason as nd.DisconnectReason reports it.
func (r *endReason) err() error {
	return &nd.DisconnectError{Peer: r.peer, Op: r.op, Status: r.st, Cause: r.cause, Detail: r.detail}
}

// byThisSide is the reason of an end this side's call made: "Disconnect",
// "Close", "Flush".
func byThisSide(op string) endReason { return endReason{op: op} }

// opNames are the requests' names as DisconnectError.Op gives them.
var opNames = [...]string{
	OpSend:           "Send",
	OpSendInvalidate: "SendAndInvalidate",
	OpRead:           "Read",
	OpWrite:          "Write",
	OpBind:           "Bind",
	OpInvalidate:     "Invalidate",
	OpReceive:        "Receive",
}

// requestEnd is the reason of an end that wr's completion with st made. A
// request the transport canceled while the connection was up went with
// the link: the peer or the connection ended it.
func (ep *Endpoint) requestEnd(wr *WorkRequest, st nd.Status) endReason {
	if st == nd.ErrCanceled {
		return ep.peerEnd(st)
	}
	return endReason{op: opNames[wr.Op], st: st, cause: wr.cause}
}

// peerEnd is the reason of an end the transport reported with st: the
// peer's refused access if this side refused one, else the peer's end
// (ErrCanceled, a close without an error, counts as a deliberate one).
func (ep *Endpoint) peerEnd(st nd.Status) endReason {
	if v := ep.refused.Load(); v != 0 {
		op := "Read"
		if v&refusedWrite != 0 {
			op = "Write"
		}
		return endReason{peer: true, op: op, st: nd.ErrAccessViolation, cause: nd.CausePeerAccess, detail: Fault(v >> 1).String()}
	}
	if st == nd.ErrCanceled {
		st = nd.Success
	}
	return endReason{peer: true, st: st}
}

// noReceive is the reason of an end a Send of the peer made that found no
// Receive.
var noReceive = endReason{peer: true, op: "Send", st: nd.ErrBufferOverflow, cause: nd.CauseNoReceive}

// refusedWrite marks a refused Write in Endpoint.refused, above the Fault
// shifted left by one.
const refusedWrite = 1

// noteRefused records the first access of the peer that ep refused, with
// fault f.
func (ep *Endpoint) noteRefused(f Fault, write bool) {
	v := uint32(f) << 1
	if write {
		v |= refusedWrite
	}
	ep.refused.CompareAndSwap(0, v)
}

// String says what a refused access named, for DisconnectError.Detail.
func (f Fault) String() string {
	switch f {
	case FaultInvalidToken:
		return "no window or remote access has the token"
	case FaultNotAssociated:
		return "the token's window is bound to another connection"
	case FaultRights:
		return "the window does not allow the access"
	case FaultBounds:
		return "the range is not inside the window"
	case FaultWrap:
		return "the range wraps around the address space"
	}
	return "no fault"
}

// DisconnectReason implements nd.DisconnectReasoner.
func (c *Connector) DisconnectReason() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.state != ndrules.Ended {
		return nil
	}
	return c.reason.err()
}
