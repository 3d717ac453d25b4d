// Package handoff decides who moves a transport's inbound bytes at each
// moment: the application's polls of its completion queues while they come
// and no application waits in Notify, or the transport's progress
// goroutine once the polls stop for a while or an application waits.
//
// The transport records every application poll (Polled, or PollStart and
// PollEnd around one that may last) and every waiter (Watch, Unwatch); its
// progress goroutine runs Run, which sleeps while the polls go on and calls
// the transport's serve function when they stop.
// serve moves the bytes until its Turn is over: an application polls again
// and none waits.
package handoff

import (
	"sync/atomic"
	"time"
)

// Handoff is the state a transport's pollers share with its progress
// goroutine. Create it with New. Its methods are safe for concurrent use;
// Run has one caller at a time.
type Handoff struct {
	polled  atomic.Bool  // an application polled since the progress goroutine last looked
	polling atomic.Int32 // application polls under way (PollStart, PollEnd)
	waiters atomic.Int32
	wake    chan struct{}
}

// New returns a Handoff with no polls and no waiters.
func New() *Handoff {
	return &Handoff{wake: make(chan struct{}, 1)}
}

// Polled records one application poll. It writes the shared flag only
// when the progress goroutine has cleared it (once per look of that
// goroutine, not once per poll), so that a poll loop does not take the
// flag's cache line from other pollers on every pass.
func (h *Handoff) Polled() {
	if !h.polled.Load() {
		h.polled.Store(true)
	}
}

// PollStart records the start of an application poll that may last (it
// moves bytes for as long as they come), and PollEnd its end: while one is
// under way the application is moving the bytes, so the progress goroutine
// does not take over however long it lasts, and a serve in progress ends.
// The poll is recorded once, at its end: until then polling shows it.
func (h *Handoff) PollStart() { h.polling.Add(1) }

// PollEnd records the end of a poll PollStart began. The poll is recorded
// before polling goes down, so that no check sees neither.
func (h *Handoff) PollEnd() {
	h.Polled()
	h.polling.Add(-1)
}

// Watch records an application goroutine that waits in Notify, and ends
// Run's sleep at once. A transport whose serve blocks in the kernel must
// also interrupt that wait.
func (h *Handoff) Watch() {
	h.waiters.Add(1)
	h.Wake()
}

// Unwatch records the end of one Watch.
func (h *Handoff) Unwatch() { h.waiters.Add(-1) }

// Watched reports whether an application waits in Notify (between Watch
// and Unwatch): the progress goroutine is on duty.
func (h *Handoff) Watched() bool { return h.waiters.Load() > 0 }

// Wake ends Run's sleep (not a serve in progress), or the next one if Run
// is not sleeping; it never blocks.
func (h *Handoff) Wake() {
	select {
	case h.wake <- struct{}{}:
	default:
	}
}

// Forget drops a Wake that Run has not consumed, for a transport whose
// progress goroutine ends (a later one starts afresh).
func (h *Handoff) Forget() {
	select {
	case <-h.wake:
	default:
	}
}

// Run is the progress goroutine's loop. While no application waits in
// Notify, it sleeps for gone (or until Wake), then checks ended, and calls
// serve only if no application polled meanwhile and none is polling; while
// one waits, it calls serve at once. serve moves the bytes until t.Over()
// and returns true, or returns false when the goroutine must end. Run
// returns when ended reports true or serve returns false.
func (h *Handoff) Run(gone time.Duration, ended func() bool, serve func(t *Turn) bool) {
	timer := time.NewTimer(gone)
	defer timer.Stop()
	h.polled.Store(false) // polls before Run began are not the turn's
	t := Turn{h: h}
	for {
		if h.waiters.Load() == 0 {
			timer.Reset(gone)
			select {
			case <-timer.C:
			case <-h.wake:
			}
			if ended() {
				return
			}
			if t.Over() {
				continue
			}
		}
		if !serve(&t) {
			return
		}
	}
}

// Turn is one stretch of Run's serve.
type Turn struct {
	h *Handoff
}

// Over reports whether an application polled since the last call (or since
// the turn began), or is polling, and none waits in Notify: the polls move
// the bytes again, and serve must return.
func (t *Turn) Over() bool {
	if t.h.waiters.Load() != 0 {
		return false
	}
	// Swap only a set flag: a poll that found it set (and left it) before
	// the swap is counted by it, and one after it finds it clear and sets
	// it again.
	polled := t.h.polled.Load() && t.h.polled.Swap(false)
	return polled || t.h.polling.Load() != 0
}
