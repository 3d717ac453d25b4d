package tcp

import (
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/godirect/nd/internal/engine"
	"github.com/godirect/nd/internal/handoff"
	"github.com/godirect/nd/internal/linktable"
)

var _ engine.Progress = (*transport)(nil)

// progress is a provider's readiness set: every link of the provider whose
// handshake is over, kept in one readiness set of the kernel's (readySet:
// epoll on Linux) so that finding the links with inbound bytes costs the
// same whatever their number. Whoever holds mu moves those bytes: an
// application poll of any completion queue of the provider (Poll), or the
// progress goroutine (serve) while no application polls. Where the kernel
// offers no such set, each link's reader goroutine moves its own bytes
// instead (readySet.perLink).
type progress struct {
	cfg *Config

	// mu: the set's poller (one application poll, or the progress
	// goroutine), and the slot table. The table's direct snapshot (its
	// links while they are at most directPollLinks) is read without mu: an
	// application poll reads each of them instead of asking the kernel
	// which are ready.
	mu          sync.Mutex
	kset        readySet
	links       *linktable.Table[link]
	events      []readyEvent // the application poll's (mu)
	serveEvents []readyEvent // the progress goroutine's
	round       uint64       // polls of the set so far (mu): links note the round that handled them

	// handoff counts the application's polls and Notify waiters for the
	// progress goroutine; woke is set when a link woke its writer
	// goroutine; copying counts writers inside a long write (at least
	// rawMax bytes). readAfter is set while a direct link is inside an
	// inbound message (receivePause): 0 outside one, else the time
	// (monotime) before which the application's polls do not read it.
	handoff   *handoff.Handoff
	woke      atomic.Bool
	copying   atomic.Int32
	readAfter atomic.Int64

	// The progress goroutine: it runs while the set holds links.
	running bool // under mu

	// The links holding back a response for their application's answer
	// (deferTx); heldCount is len(held).
	heldMu    sync.Mutex
	held      []*link
	heldCount atomic.Int32
}

// readyEvent is a link the kernel found ready, by slot.
type readyEvent = int32

func newProgress(cfg *Config) *progress {
	return &progress{cfg: cfg, handoff: handoff.New(), links: linktable.New[link](directPollLinks), events: make([]readyEvent, readyBatch), serveEvents: make([]readyEvent, readyBatch)}
}

// Poll implements engine.Progress: an application poll of one of the
// provider's completion queues found it empty. It moves the inbound bytes
// of the links that have some, unless another goroutine is doing so.
func (t *transport) Poll() bool { return t.progress.poll() }

// Watch implements engine.Progress: an application waits in Notify; the
// progress goroutine moves the bytes until it stops (Unwatch).
func (t *transport) Watch() { t.progress.watch() }

// Unwatch implements engine.Progress.
func (t *transport) Unwatch() {
	if !perLink {
		t.progress.handoff.Unwatch()
	}
}

func (p *progress) poll() bool {
	if perLink {
		return false // the links' reader goroutines move the bytes
	}
	// A poll that finds bytes reads them for as long as they come (a
	// long payload: hundreds of microseconds): meanwhile the progress
	// goroutine must not take over.
	p.handoff.PollStart()
	defer p.handoff.PollEnd()
	if p.copying.Load() > 0 {
		// A writer's long write is copying in the kernel on another
		// thread: on a process confined to one core, this poll would
		// take turns with the copy it waits for. Let the copy run
		// first; then poll, since the write may wait for this process
		// to read the other end.
		yieldProcessor()
	}
	if p.woke.Load() {
		// A writer goroutine has bytes to send: on a process confined
		// to one processor, an application polling in a loop would leave
		// it none until the scheduler preempts the loop, 10 ms on.
		p.woke.Store(false)
		runtime.Gosched()
	}
	if d := p.links.Direct(); d != nil {
		return p.pollDirect(d)
	}
	if !p.mu.TryLock() {
		// Another poller moves the bytes: let it finish (on one
		// processor it may be the progress goroutine, preempted).
		runtime.Gosched()
		return false
	}
	handled := p.serveLocked(p.kset.wait(p.events, 0, false))
	p.mu.Unlock()
	return handled
}

// pollDirect reads the direct links (few: a non-blocking read of each
// costs what asking the kernel would, and the read that finds bytes is
// already made). While one is inside an inbound message, a read that
// finds nothing pauses the reads for receivePause times as long as that
// poll took, receivePauseMax at most.
func (p *progress) pollDirect(d []*link) bool {
	after := p.readAfter.Load()
	var start int64
	if after != 0 {
		if start = monotime(); start < after {
			return false
		}
	}
	handled, inMessage := false, false
	for _, l := range d {
		h, in := l.pollRx(true)
		handled = handled || h
		inMessage = inMessage || in
	}
	switch {
	case !inMessage:
		if after != 0 {
			p.readAfter.Store(0)
		}
	case after == 0:
		p.readAfter.Store(1) // from the next poll on, timed
	case !handled:
		end := monotime()
		p.readAfter.Store(end + min((end-start)*receivePause, int64(receivePauseMax)))
	}
	return handled
}

// monoOrigin is monotime's origin.
var monoOrigin = time.Now()

// monotime returns the monotonic clock in nanoseconds since monoOrigin. A
// variable for tests.
var monotime = func() int64 { return int64(time.Since(monoOrigin)) }

// serveLocked moves the inbound bytes of the ready links (by slot), then
// sends the responses that links not among them hold back: their
// application has nothing new to answer. mu held.
func (p *progress) serveLocked(ready []readyEvent) bool {
	p.round++
	handled := false
	for _, slot := range ready {
		if l := p.links.At(slot); l != nil {
			if h, _ := l.pollRx(false); h {
				l.handledRound = p.round
				handled = true
			}
		}
	}
	if p.heldCount.Load() > 0 {
		p.releaseHeld(p.round)
	}
	return handled
}

// watch puts the progress goroutine on duty: handoff.Watch ends its wait
// between turns, and the interrupt ends a wait in the kernel.
func (p *progress) watch() {
	if perLink {
		return
	}
	p.handoff.Watch()
	p.mu.Lock()
	p.kset.interrupt()
	p.mu.Unlock()
}

// wakeLocked wakes the progress goroutine, wherever it waits; mu held (the
// set stays open meanwhile).
func (p *progress) wakeLocked() {
	p.handoff.Wake()
	p.kset.interrupt()
}

// add puts a link whose handshake is over into the set; from now on the
// set's pollers move its inbound bytes. An error (the kernel refused it)
// leaves the link out of the set.
func (p *progress) add(l *link) error {
	if perLink {
		l.rxStarted.Store(true)
		l.wg.Add(1)
		go l.readLoop()
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.kset.open(); err != nil {
		return err
	}
	slot, _ := p.links.Add(l)
	if err := p.kset.add(l, slot); err != nil {
		p.links.Undo(slot)
		return err
	}
	l.slot = slot
	l.rxStarted.Store(true)
	p.links.Publish()
	if !p.running {
		p.running = true
		go p.handoff.Run(pollerGone, p.ended, p.serve)
	}
	return nil
}

// remove takes a link out of the set once nothing reads it any more.
func (p *progress) remove(l *link) {
	if perLink {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.links.Remove(l.slot, l) {
		return
	}
	p.kset.remove(l)
	l.slot = -1
	p.links.Publish()
	if p.links.Live() == 0 {
		p.wakeLocked() // the progress goroutine ends, and closes the set
	}
}

// serve moves the bytes for as long as no application polls; it returns
// false when the set emptied (the goroutine ends).
func (p *progress) serve(turn *handoff.Turn) bool {
	events := p.serveEvents
	spinUntil := time.Now().Add(p.cfg.Spin)
	for i := 1; ; i++ {
		timeout := -1
		if p.cfg.Spin > 0 && (i&15 != 0 || time.Now().Before(spinUntil)) {
			timeout = 0
		}
		ready := p.kset.wait(events, timeout, true)
		if p.ended() {
			return false
		}
		if len(ready) > 0 {
			p.mu.Lock()
			if p.serveLocked(ready) {
				spinUntil = time.Now().Add(p.cfg.Spin)
			}
			p.mu.Unlock()
		}
		if p.heldCount.Load() > 0 {
			// Let the application answer what came with the held
			// responses, so that they leave with its answer; then
			// they leave anyway.
			runtime.Gosched()
			p.releaseHeld(0)
		}
		if turn.Over() {
			return true // an application polls again, and none waits
		}
		if timeout == 0 {
			runtime.Gosched()
		}
	}
}

// ended reports whether the set emptied, and if so closes it and lets the
// progress goroutine end (a later add opens it and starts a new one).
func (p *progress) ended() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.links.Live() > 0 {
		return false
	}
	p.kset.close()
	p.links.Reset()
	p.running = false
	p.handoff.Forget()
	return true
}

// deferTx holds back a queued response to a zero-length Read (the link's
// poller calls it), so that it leaves with the application's answer to
// what came with it: the next send takes it along. If none comes first, it
// leaves at the next poll of the link that finds nothing new, once the
// progress goroutine let the application run, or at the latest deferLimit
// later. The timer is armed when no earlier deferral of the link armed it,
// and not stopped when the response leaves before it fires: it then fires
// once for nothing held (deferExpired): a Reset and a Stop for every
// deferral, one per Write the peer confirms, cost more than that one
// firing per deferLimit (docs/tcp-transport.md).
func (l *link) deferTx() {
	p := l.t.progress
	p.heldMu.Lock()
	if !l.txDeferred.Swap(true) {
		p.held = append(p.held, l)
		p.heldCount.Store(int32(len(p.held)))
	}
	p.heldMu.Unlock()
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
	p := l.t.progress
	p.heldMu.Lock()
	held := l.txDeferred.Swap(false)
	if held {
		for i, h := range p.held {
			if h == l {
				p.held = append(p.held[:i], p.held[i+1:]...)
				break
			}
		}
		p.heldCount.Store(int32(len(p.held)))
	}
	p.heldMu.Unlock()
	return held
}

// releaseHeld sends the responses held back by links that the poll of
// round did not find ready (round 0: every one).
func (p *progress) releaseHeld(round uint64) {
	for {
		var idle *link
		p.heldMu.Lock()
		for _, h := range p.held {
			if round == 0 || h.handledRound != round {
				idle = h
				break
			}
		}
		p.heldMu.Unlock()
		if idle == nil {
			return
		}
		idle.flushDeferred()
	}
}

// deferExpired runs deferLimit after deferTx armed the timer.
func (l *link) deferExpired() {
	l.deferArmed.Store(false) // before the flag is read: no deferral is missed
	l.flushDeferred()
}

// flushDeferred sends a held-back response now (inline, or by the writer).
func (l *link) flushDeferred() {
	if l.takeDeferred() && !l.sendInline() {
		l.wakeWriter()
	}
}
