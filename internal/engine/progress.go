package engine

import "github.com/godirect/nd"

// pump issues waiting outbound requests to the transport in post order.
// Whichever goroutine finds no pump running becomes the pump and issues
// every request that is ready, including those others post meanwhile; the
// others return at once.
func (ep *Endpoint) pump() {
	ep.mu.Lock()
	ep.pumpLocked()
}

// pumpLocked is pump for a caller that holds ep.mu; it returns with ep.mu
// released.
func (ep *Endpoint) pumpLocked() {
	if ep.pumping {
		ep.mu.Unlock()
		return
	}
	ep.pumping = true
	for {
		wr := ep.nextOutboundLocked()
		if wr == nil {
			break
		}
		link := ep.link
		ep.mu.Unlock()
		done, st := ep.execute(wr, link)
		ep.mu.Lock()
		if done {
			ep.finishLocked(&ep.sq, wr, st)
		}
	}
	ep.pumping = false
	if ep.pumpWaiters > 0 {
		ep.pumpDone.Broadcast()
	}
	ep.unlock()
}

// WaitTransmit returns once no call of the link's Transmit for ep is under
// way. Transmit is called only by a pump, which takes ep.mu before each
// call: a link that marks itself closed (with an atomic store) before
// WaitTransmit, and checks the mark in Transmit, knows when it returns
// that every Transmit still to come sees the mark. A link uses it to
// release what Transmit reads without counting each call in and out
// (shm's mapping of the peer's memory). It must not be called from
// Transmit, nor while holding a lock Transmit takes.
func (ep *Endpoint) WaitTransmit() {
	ep.mu.Lock()
	for ep.pumping {
		ep.pumpWaiters++
		ep.pumpDone.Wait()
		ep.pumpWaiters--
	}
	ep.unlock()
}

// nextOutboundLocked returns the next request to issue, or nil when none is
// ready: the queue is empty, or its head waits for a read fence or for the
// outbound read limit.
func (ep *Endpoint) nextOutboundLocked() *WorkRequest {
	q := &ep.sq
	for ep.state == epConnected && q.next != q.tail {
		wr := q.slot(q.next)
		if wr.done {
			q.next++
			continue
		}
		if wr.Flags&nd.FlagReadFence != 0 && ep.readsInFlight > 0 {
			return nil
		}
		if wr.Op == OpRead && !wr.preset {
			if ep.ord == 0 {
				wr.status, wr.preset = nd.ErrInvalidRequest, true
			} else if ep.readsInFlight >= ep.ord {
				return nil
			} else {
				ep.readsInFlight++
				wr.counted = true
			}
		}
		q.next++
		return wr
	}
	return nil
}

// execute carries out one issued request: local requests here, transfers
// through the link.
func (ep *Endpoint) execute(wr *WorkRequest, link Link) (bool, nd.Status) {
	if wr.preset {
		return true, wr.status
	}
	switch wr.Op {
	case OpBind:
		return true, nd.Success
	case OpInvalidate:
		return ep.invalidateLocal(wr.window, wr)
	}
	if !stillRegistered(wr) {
		wr.cause = nd.CauseLocalAccess
		return true, nd.ErrAccessViolation
	}
	if link == nil {
		return true, nd.ErrCanceled
	}
	return link.Transmit(wr)
}

// CompleteOutbound reports the final status of an outbound request that
// Transmit left in progress. seq is the request's Seq at Transmit; a
// request already completed (flushed) is ignored.
func (ep *Endpoint) CompleteOutbound(wr *WorkRequest, seq uint64, st nd.Status) {
	ep.mu.Lock()
	if wr.Seq != seq || wr.done {
		ep.mu.Unlock()
		return
	}
	ep.finishLocked(&ep.sq, wr, st)
	// A finished Read may release a fence or the read limit for requests
	// not issued yet; a running pump sees that itself.
	waiting := !ep.pumping && ep.sq.next != ep.sq.tail
	ep.unlock()
	if waiting {
		ep.pump()
	}
}

// finishLocked records wr's final status (unless it was flushed already),
// ends the connection if the status is an error, and retires what can be.
// An access violation the engine did not find itself (a local entry,
// which set wr.cause) is the peer's refusal of a Read or Write.
func (ep *Endpoint) finishLocked(q *workQueue, wr *WorkRequest, st nd.Status) {
	if !wr.done {
		wr.done, wr.status = true, st
		if wr.counted {
			wr.counted = false
			ep.readsInFlight--
		}
		if st == nd.ErrAccessViolation && wr.cause == nd.CauseNone {
			wr.cause = nd.CauseLocalAccess
			if wr.Op == OpRead || wr.Op == OpWrite {
				wr.cause = nd.CauseRemoteAccess
			}
		}
		if st != nd.Success && ep.state != epEnded {
			ep.endLocked(st, ep.requestEnd(wr, st))
		}
	}
	ep.retireLocked(q)
}

// retireLocked moves finished requests from the head of q to their
// completion queue, in post order.
func (ep *Endpoint) retireLocked(q *workQueue) {
	if q == &ep.rq && ep.srq != nil {
		ep.retireSharedLocked()
		return
	}
	cq := ep.outCQ
	if q == &ep.rq {
		cq = ep.inCQ
	}
	for q.head < q.tail {
		wr := q.slot(q.head)
		if !wr.done {
			return
		}
		res := wr.result
		res.Status, res.Cause = wr.status, wr.cause
		res.BytesTransferred = wr.Length
		if wr.status != nd.Success {
			res.BytesTransferred = 0
		}
		if wr.Flags&nd.FlagSilentSuccess == 0 || wr.status != nd.Success {
			cq.push(res, &q.outstanding, wr.solicited)
		} else {
			q.outstanding.release()
		}
		wr.result, wr.window, wr.SGL = nil, nil, nil
		clear(wr.sge) // the entries fillSGL or setReceiveSGL filled
		q.head++
		if q.next < q.head {
			q.next = q.head
		}
	}
}

// endLocked ends the connection with status st, for reason why: every
// request not yet issued to the transport completes ErrCanceled (the
// transport completes those it owns when its link closes), and the link is
// closed after unlocking.
func (ep *Endpoint) endLocked(st nd.Status, why endReason) {
	if ep.state == epEnded {
		return
	}
	ep.state = epEnded
	ep.closeWhy = why
	for _, q := range [2]*workQueue{&ep.sq, &ep.rq} {
		for i := q.next; i < q.tail; i++ {
			wr := q.slot(i)
			if !wr.done {
				wr.done, wr.status = true, nd.ErrCanceled
				if wr.counted {
					wr.counted = false
					ep.readsInFlight--
				}
			}
		}
		q.next = q.tail
		ep.retireLocked(q)
	}
	ep.closePending, ep.closeLink, ep.closeStatus = true, ep.link, st
	ep.link = nil
}

// unlock releases ep.mu and carries out a teardown decided under it: the
// link is closed, the endpoint's windows are unbound and the connector
// learns that the connection ended.
func (ep *Endpoint) unlock() {
	if !ep.closePending {
		ep.mu.Unlock()
		return
	}
	link, st, inbound, why := ep.closeLink, ep.closeStatus, ep.closeInbound, ep.closeWhy
	ep.closePending, ep.closeLink, ep.closeInbound = false, nil, false
	ep.mu.Unlock()
	ep.a.unbindEndpoint(ep, link)
	if ic, ok := link.(InboundCloser); ok && inbound {
		ic.CloseInbound(st)
	} else if link != nil {
		link.Close(st)
	}
	ep.c.ended(&why)
}

// terminate ends the connection with status st (ErrCanceled for a local
// flush or close), for reason why; it is idempotent.
func (ep *Endpoint) terminate(st nd.Status, why endReason) {
	ep.mu.Lock()
	ep.endLocked(st, why)
	ep.unlock()
}

// Terminate ends the connection because of an error the transport found
// in inbound traffic (a malformed frame, a protocol violation, a broken
// connection). Every outstanding request completes ErrCanceled.
func (ep *Endpoint) Terminate(st nd.Status) {
	ep.mu.Lock()
	ep.endLocked(st, ep.peerEnd(st))
	ep.unlock()
}

// attach connects ep to link with the negotiated read limits; data may
// flow from now on.
func (ep *Endpoint) attach(link Link, ird, ord int) error {
	// A link that publishes windows learns of the adapter's open remote
	// accesses once, before any AllowRemoteAccess or Close can find it.
	t, publishes := link.(WindowTable)
	if publishes {
		ep.a.publishMu.Lock()
		defer ep.a.publishMu.Unlock()
	}
	ep.mu.Lock()
	if ep.state != epIdle {
		ep.mu.Unlock()
		return nd.ErrInvalidDeviceState
	}
	ep.link, ep.ird, ep.ord = link, ird, ord
	ep.state = epAccepting
	ep.mu.Unlock()
	link.Attach(ep)
	if publishes {
		ep.a.publishRemoteAccess(t)
	}
	return nil
}

// ready lets outbound requests flow on an attached endpoint.
func (ep *Endpoint) ready() {
	ep.mu.Lock()
	if ep.state == epAccepting {
		ep.state = epConnected
	}
	ep.mu.Unlock()
}

// detach returns an attached endpoint whose connection failed before it
// was established to the idle state; its posted Receives stay.
func (ep *Endpoint) detach() {
	ep.mu.Lock()
	if ep.state == epAccepting {
		ep.state, ep.link = epIdle, nil
	}
	ep.mu.Unlock()
}

// Ended reports whether the endpoint's connection has ended (an error,
// Flush, Disconnect, a close). A transport that finds a remote access
// refused by Access may ask it: the window went away with the connection,
// so the initiator's request is canceled rather than refused.
func (ep *Endpoint) Ended() bool { return ep.ended.Load() }

// Limits returns the endpoint's negotiated inbound and outbound read limits.
func (ep *Endpoint) Limits() (ird, ord int) {
	ep.mu.Lock()
	defer ep.mu.Unlock()
	return ep.ird, ep.ord
}

// TakeReceive hands the transport the oldest posted Receive (of the
// endpoint's shared receive queue, if it uses one) for an incoming Send of
// n bytes (n < 0: length not known yet). If there is none, if it is
// smaller than n, or if its memory is no longer registered, the Receive
// completes with the error (ErrBufferOverflow, ErrAccessViolation), the
// connection ends, and TakeReceive returns the status for the sender's
// request (ErrRemoteError) and a nil request. Otherwise the transport owns
// the Receive until CompleteReceive.
func (ep *Endpoint) TakeReceive(n int) (*WorkRequest, nd.Status) {
	ep.mu.Lock()
	wr, st := ep.takeReceiveLocked(n)
	ep.unlock()
	return wr, st
}

// ReceiveNow is TakeReceive, the copy of data into the Receive and
// CompleteReceive in one step under one lock, for an inbound Send whose
// len(data) bytes all arrived at once. Meant for small Sends: the copy
// holds the endpoint's lock. It returns TakeReceive's status.
func (ep *Endpoint) ReceiveNow(data []byte, solicited bool) nd.Status {
	ep.mu.Lock()
	wr, st := ep.takeReceiveLocked(len(data))
	if wr != nil {
		Scatter(wr.SGL, data)
		wr.solicited, wr.Length = solicited, len(data)
		ep.finishLocked(&ep.rq, wr, nd.Success)
	}
	ep.unlock()
	return st
}

// takeReceiveLocked is TakeReceive under ep.mu; the caller releases it with
// ep.unlock (a failure ended the connection).
func (ep *Endpoint) takeReceiveLocked(n int) (*WorkRequest, nd.Status) {
	if ep.state != epConnected && ep.state != epAccepting {
		return nil, nd.ErrCanceled
	}
	q := &ep.rq
	var wr *WorkRequest
	if ep.srq != nil {
		wr = ep.takeSharedLocked()
	} else if q.next != q.tail {
		wr = q.slot(q.next)
		q.next++
	}
	if wr == nil {
		ep.endLocked(nd.ErrRemoteError, noReceive)
		ep.closeInbound = ep.closePending
		return nil, nd.ErrRemoteError
	}
	st := nd.Success
	switch {
	case wr.preset:
		st = wr.status
	case n > wr.Length:
		st = nd.ErrBufferOverflow
	case !stillRegistered(wr):
		st, wr.cause = nd.ErrAccessViolation, nd.CauseLocalAccess
	}
	if st != nd.Success {
		ep.finishLocked(q, wr, st)
		ep.closeInbound = ep.closePending
		return nil, nd.ErrRemoteError
	}
	return wr, nd.Success
}

// CompleteReceive completes a Receive taken with TakeReceive: n bytes were
// placed, with status st; solicited marks a Send that carried
// FlagSendAndSolicitEvent.
func (ep *Endpoint) CompleteReceive(wr *WorkRequest, n int, st nd.Status, solicited bool) {
	ep.mu.Lock()
	wr.solicited = solicited
	if !wr.done {
		wr.Length = n
	}
	ep.finishLocked(&ep.rq, wr, st)
	ep.closeInbound = ep.closePending && st != nd.Success
	ep.unlock()
}
