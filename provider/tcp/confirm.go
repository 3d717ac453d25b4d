package tcp

import (
	"github.com/godirect/nd"
)

// Confirmed completion.
//
// iWARP has no acknowledgment: a Send or Write is done, for the sender, once
// TCP took it. But ND reports a remote failure (a Write outside the peer's
// window, a Send the peer had no Receive for) in the completion of the
// request that caused it, and a request reported successful must not be
// lost. So, when the peer's inbound read limit leaves a spare slot, the
// transport holds Send and Write completions until the peer proves it placed
// them: RDMA Read Requests are served in order with the messages before
// them, so the response to any Read (the endpoint's, or a zero-length one
// the writer adds when it falls idle) confirms every message sent before
// it. A Terminate from the peer names the message it refused (the copied
// DDP header); the messages before it completed, that one gets the error,
// and the rest are canceled. Both sides reserve the slot by announcing one
// more than the application's read limits in the MPA exchange.

// confirming reports whether Sends and Writes wait for confirmation; l.mu
// held.
func (l *link) confirming() bool { return l.confirm }

// setConfirm decides, once the endpoint is attached and before the writer
// starts, whether confirmation Reads fit in the peer's inbound read limit.
func (l *link) setConfirm() {
	ep := l.ep.Load()
	if ep == nil {
		return
	}
	_, ord := ep.Limits()
	l.mu.Lock()
	// Only toward godirect peers: Linux siw (6.1) may answer a zero-length
	// Read Request that arrives while it is sending with a response
	// carrying the bytes of its previous work request, so toward siw Sends
	// and Writes complete when written, as siw's own do.
	l.confirm = l.peerIRD > ord && l.godirect
	l.silentBatch = uint64(max(1, ep.OutboundEntries()/2))
	// The endpoint's own Reads may take ord of the peer's inbound slots;
	// confirmation Reads get the rest, so together they never exceed it.
	l.confirmSlots = l.peerIRD - ord
	l.mu.Unlock()
}

// maybeConfirm adds a zero-length Read to the batch when the writer is
// about to fall idle with Sends or Writes no Read covers yet.
func (l *link) maybeConfirm(s *sender, w *writerState) error {
	l.mu.Lock()
	need := l.confirmDueLocked() && len(l.jobs) == 0
	l.mu.Unlock()
	if !need {
		return nil
	}
	w.readMSN++
	return l.sendRead(s, w, nil, 0, 0)
}

// confirmDueLocked reports whether Sends or Writes no Read covers wait for
// a confirmation Read, and one fits in the peer's inbound read limit: one
// that is not silent, half the outbound queue's worth of silent ones, or
// silent ones that waited silentDelay. l.mu held.
func (l *link) confirmDueLocked() bool {
	if !l.confirm || l.sentSeq == l.coveredSeq || l.confirmsOut >= l.confirmSlots {
		return false
	}
	return l.urgentSeq > l.coveredSeq || l.sentSeq-l.coveredSeq >= l.silentBatch || l.silentDue
}

// sentSilentLocked notes that a silent Send or Write went out unconfirmed:
// silentTimer makes sure it is confirmed. l.mu held.
func (l *link) sentSilentLocked() {
	if !l.silentArmed {
		l.silentArmed = true
		l.silentTimer.Reset(silentDelay)
	}
}

// silentExpired asks the writer for the confirmation of the silent Sends
// and Writes that still wait (silentTimer).
func (l *link) silentExpired() {
	l.mu.Lock()
	l.silentArmed = false
	l.silentDue = l.sentSeq > l.coveredSeq
	due := l.phase != phaseClosed && l.confirmDueLocked()
	l.mu.Unlock()
	if due {
		l.wakeWriter()
	}
}

// readDone completes the oldest outstanding Read, whose response has fully
// arrived, and every Send and Write it confirms. Called by the link's poller (rxMu held).
func (l *link) readDone(rs *readerState) {
	l.mu.Lock()
	if l.orq.Len() == 0 {
		l.mu.Unlock()
		return
	}
	e := l.orq.Pop()
	if e.wr == nil {
		l.confirmsOut--
	}
	rs.confirmed = rs.confirmed[:0]
	for l.unconfirmed.Len() > 0 && l.unconfirmed.At(0).n <= e.upTo {
		rs.confirmed = append(rs.confirmed, l.unconfirmed.Pop())
	}
	// Messages sent while the read limit was used up wait for a
	// confirmation Read that now fits: the writer adds it.
	due := l.confirmDueLocked()
	l.mu.Unlock()
	if due {
		l.wakeWriter()
	}
	ep := l.ep.Load()
	for _, c := range rs.confirmed {
		ep.CompleteOutbound(c.wr, c.seq, nd.Success)
	}
	clear(rs.confirmed)
	if e.wr != nil {
		ep.CompleteOutbound(e.wr, e.seq, nd.Success)
	}
}
