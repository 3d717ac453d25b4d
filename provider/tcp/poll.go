package tcp

import (
	"time"

	"github.com/godirect/nd/internal/engine"
)

var _ engine.Poller = (*link)(nil)

// Poll implements engine.Poller: the application's poll handles the FPDUs
// that have arrived, on its own goroutine, unless the reader goroutine is
// at work (it then returns false). It never waits for the peer: it takes a
// short FPDU once all of it is buffered, and leaves a long one to the
// reader goroutine (kickReader), or, while that is parked in the network
// poller, takes as much of it as has arrived. A poll that finds the link
// inside a long read or write yields the processor to that copy, which is
// the work the poller waits for. Safe for concurrent use, also after the
// link ended.
func (l *link) Poll() bool {
	if n := l.polls.Add(1); n%yieldPolls == 0 {
		otherWork(l, n%parkedPolls == 0)
	}
	if n := l.t.heldCount.Load(); n > 1 || n == 1 && !l.txDeferred.Load() {
		l.t.releaseHeld(l) // another link holds a response
	}
	if l.appWaits.Load() {
		l.appWaits.Store(false)
	}
	if l.inSyscall.Load() > 0 {
		// A long write or read of the link is copying on another
		// thread: this processor is better spent there.
		yieldProcessor()
		return false
	}
	return l.pollRx()
}

// pollRx handles, without waiting, the FPDUs that have arrived, unless
// someone else holds rxMu; with nothing new, a response held back for the
// application's answer leaves.
func (l *link) pollRx() bool {
	if !spinSupported || !l.rxStarted.Load() || !l.rxMu.TryLock() {
		return false
	}
	handled := false
	if !l.rs.stopped {
		var err error
		if handled, err = l.rxStep(&l.rs, true); err != nil {
			l.rs.stopped = true
		}
	}
	l.rxMu.Unlock()
	if !handled {
		// The application has nothing new to answer: a response held
		// back for its answer leaves now.
		l.flushDeferred()
	}
	return handled
}

// Watch implements engine.Poller: the reader goroutine stops waiting for
// the application's polls and watches the socket itself.
func (l *link) Watch() {
	l.appWaits.Store(true)
	l.kickChannel()
}

// deferTx holds back a queued response to a zero-length Read (the reader
// calls it), so that it leaves with the application's answer to what came
// with it: the next send takes it along. If none comes first, it leaves at
// the next poll of the link that finds nothing new, at a poll of another
// link of the provider while this one is not polled (the application
// waits on something else), when the reader goroutine falls idle, or at
// the latest deferLimit later.
func (l *link) deferTx() {
	t := l.t
	t.heldMu.Lock()
	l.heldPolls = l.polls.Load()
	if !l.txDeferred.Swap(true) {
		t.held = append(t.held, l)
		t.heldCount.Store(int32(len(t.held)))
	}
	t.heldMu.Unlock()
	if !l.deferArmed.Load() && l.deferArmed.CompareAndSwap(false, true) {
		l.deferTimer.Reset(deferLimit)
	}
}

// takeDeferred ends the holding back of a response, if any: it reports
// whether a response was held (the caller sends it).
func (l *link) takeDeferred() bool {
	if !l.txDeferred.Load() {
		return false
	}
	t := l.t
	t.heldMu.Lock()
	held := l.txDeferred.Swap(false)
	if held {
		for i, h := range t.held {
			if h == l {
				t.held = append(t.held[:i], t.held[i+1:]...)
				break
			}
		}
		t.heldCount.Store(int32(len(t.held)))
	}
	t.heldMu.Unlock()
	return held
}

// releaseHeld sends the responses that links other than polled hold back
// while the application does not poll them: it polls polled instead, so
// the answer those responses wait for is not coming soon, and a timer
// (deferLimit) may not fire for a long while when polls keep the only
// processor busy. A link that is polled itself sends its response at its
// first poll that finds nothing new.
func (t *transport) releaseHeld(polled *link) {
	t.heldMu.Lock()
	var idle *link
	for _, h := range t.held {
		if h != polled && h.polls.Load() == h.heldPolls {
			idle = h
			break
		}
	}
	t.heldMu.Unlock()
	if idle != nil {
		idle.flushDeferred()
	}
}

// deferLimit bounds how long a response deferTx held back waits: the
// peer's request waits for it. An application that answers does so within
// microseconds; one that polls another endpoint meanwhile must not hold
// the peer for long.
var deferLimit = 20 * time.Microsecond // a variable for tests

// deferExpired runs deferLimit after deferTx armed the timer.
func (l *link) deferExpired() {
	l.deferArmed.Store(false) // before the flag is read: no deferral is missed
	l.flushDeferred()
}

// flushDeferred sends a held-back response now (inline, or by the writer).
func (l *link) flushDeferred() {
	if l.takeDeferred() && !l.sendInline() {
		l.ring()
	}
}

// kickReader has the reader goroutine take over the inbound traffic: a
// poll found a long FPDU. It reports false when the reader is parked in
// the network poller, which may take long to wake it: the poll then reads
// on itself.
func (l *link) kickReader() bool {
	l.rxKicked.Store(true)
	if l.rxParked.Load() {
		return false
	}
	l.kickChannel()
	return true
}

// kickChannel wakes a reader waiting for kicks.
func (l *link) kickChannel() {
	select {
	case l.rxKick <- struct{}{}:
	default:
	}
}
