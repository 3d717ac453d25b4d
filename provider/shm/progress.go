//go:build linux || windows || darwin || freebsd

package shm

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

// progress is a provider's readiness set: every attached link of the
// provider, so that finding the links whose inbound ring holds records
// costs what is ready, not what exists. A link is either hot, polled on
// every pass of the set, or armed: it asked its peer (the ring's sleeping
// flag) to ring its inbound doorbell at the next record, and that doorbell
// sits in the set's readySet (readyset_linux.go: an epoll instance,
// edge-triggered, the link's slot and generation as data;
// readyset_doorbells.go: a waiting goroutine per doorbell). A hot link that
// stays empty for a while is armed; an armed link whose doorbell rings
// turns hot again. While the provider has
// at most directPollLinks links, every link is polled on every pass and
// only the progress goroutine arms them, before it blocks.
//
// Whoever holds mu moves the bytes: an application poll of any completion
// queue of the provider (Poll), or the progress goroutine (serve) while no
// application polls. In direct mode application polls read the links
// without mu, each under the link's rxMu.
type progress struct {
	cfg *Config

	// mu: the set's poller, the slot table (whose direct snapshot, the
	// links while they are at most directPollLinks, is read without mu)
	// and the hot list.
	mu     sync.Mutex
	set    readySet // the doorbells, and what interrupts a blocking wait
	opened bool
	links  *linktable.Table[link]
	hot    []*link
	looks  int  // ring looks by application polls since the kernel was last asked (mu)
	rang   bool // the last look at the set found doorbells (mu)
	events []readyEvent
	ctl    readyEvent // add's (mu)

	// handoff counts the application's polls and Notify waiters for the
	// progress goroutine; woke is set when a link started its writer
	// goroutine.
	handoff *handoff.Handoff
	woke    atomic.Bool

	// The progress goroutine: it runs while the set holds links. asleep
	// is set while it waits in the kernel with every link armed: a poll
	// that disarms a link then wakes it (set.wake, see disarmed), since
	// nothing would ring for that link and the goroutine must take it
	// over again when polls stop. disarms counts the links disarmed.
	running bool // under mu
	asleep  atomic.Bool
	disarms atomic.Uint64
	// wakeMu guards set's life against wakes from outside mu.
	wakeMu sync.Mutex

	// The pull helper (rx.go), shared by the provider's links: it runs
	// from the first split pull until the set empties.
	helperMu sync.Mutex
	helper   *pullHelper
}

func newProgress(cfg *Config) *progress {
	return &progress{
		cfg: cfg, set: noReadySet, handoff: handoff.New(),
		links:  linktable.New[link](directPollLinks),
		events: make([]readyEvent, readyBatch),
	}
}

// Poll implements engine.Progress: an application poll of one of the
// provider's completion queues found it empty. It moves what arrived on
// the links that are ready, unless another goroutine is doing so.
func (t *transport) Poll() bool { return t.progress.poll() }

// Watch implements engine.Progress: an application waits in Notify; the
// progress goroutine moves the bytes until it stops (Unwatch), whatever
// other goroutines' polls do.
func (t *transport) Watch() { t.progress.watch() }

// Unwatch implements engine.Progress.
func (t *transport) Unwatch() { t.progress.handoff.Unwatch() }

func (p *progress) poll() bool {
	p.handoff.Polled()
	if p.woke.Load() {
		// A writer goroutine started: on a process confined to one
		// processor, an application polling in a loop would leave it none
		// until the scheduler preempts the loop, 10 ms on.
		p.woke.Store(false)
		runtime.Gosched()
	}
	if d := p.links.Direct(); d != nil {
		return pollDirect(d, true)
	}
	if !p.mu.TryLock() {
		return false // another poller moves the bytes
	}
	var ready []readyEvent
	p.looks += 1 + len(p.hot)
	if len(p.hot) < p.links.Live() && (p.rang || p.looks >= epollLooks) {
		// Some links are armed: ask the kernel which of them rang; again
		// at the next pass while it names some (more may wait).
		ready = p.waitLocked(p.events, 0)
		p.rang = len(ready) > 0
		p.looks = 0
	}
	moved := p.serveLocked(true, ready)
	p.mu.Unlock()
	return moved
}

// watch puts the progress goroutine on duty (handoff.Watch ends its wait
// between turns). If it sleeps in the kernel it is woken too; otherwise
// no system call is made: a goroutine that spins sees the watch at its
// next pass, and one that is about to sleep armed every link first, so
// that the next record rings it awake (a link an application poll
// disarmed meanwhile is the disarmed counter's case).
func (p *progress) watch() {
	p.handoff.Watch()
	if p.asleep.Load() {
		p.nudge()
	}
}

// interrupt wakes the progress goroutine, wherever it waits.
func (p *progress) interrupt() {
	p.handoff.Wake()
	p.nudge()
}

// disarmed is called after a poller disarmed a link: if the progress
// goroutine sleeps (or is about to) counting on that link's doorbell, it
// must wake and take the link over. The goroutine sets asleep and then
// looks at disarms; this counts and then looks at asleep: one of the two
// sees the other.
func (p *progress) disarmed() {
	p.disarms.Add(1)
	if p.asleep.Load() && p.asleep.Swap(false) {
		p.nudge()
	}
}

// nudge ends the progress goroutine's wait in the kernel, if it waits
// there. It may be called with or without mu.
func (p *progress) nudge() {
	p.wakeMu.Lock()
	if p.opened {
		p.set.wake()
	}
	p.wakeMu.Unlock()
}

// pollDirect is a pass in direct mode: every link is read (pollRx); it
// reports whether any had records.
func pollDirect(links []*link, app bool) bool {
	moved := false
	for _, l := range links {
		if l.pollRx(app) {
			moved = true
		}
	}
	return moved
}

// serveLocked is one pass of the set: the links whose doorbell rang
// (ready) turn hot, and every hot link is served; in direct mode every
// link is. app: an application poll (quiet Acks may wait). mu held.
func (p *progress) serveLocked(app bool, ready []readyEvent) bool {
	if d := p.links.Direct(); d != nil {
		return pollDirect(d, app)
	}
	for i := range ready {
		if l := p.links.Get(ready[i].Fd, uint32(ready[i].Pad)); l != nil && l.hotIdx < 0 {
			p.pushHotLocked(l)
		}
	}
	armAfter := armIdlePasses
	moved := false
	for i := 0; i < len(p.hot); {
		l := p.hot[i]
		m, keep := l.serveHot(app, armAfter)
		if m {
			moved = true
		}
		if !keep {
			p.dropHotLocked(l)
			continue
		}
		i++
	}
	return moved
}

func (p *progress) pushHotLocked(l *link) {
	l.hotIdx = int32(len(p.hot))
	p.hot = append(p.hot, l)
}

func (p *progress) dropHotLocked(l *link) {
	i := l.hotIdx
	if i < 0 {
		return
	}
	last := len(p.hot) - 1
	p.hot[i] = p.hot[last]
	p.hot[i].hotIdx = i
	p.hot[last] = nil
	p.hot = p.hot[:last]
	l.hotIdx = -1
}

// armAllLocked arms every link before the progress goroutine blocks. It
// reports false when some link has records (or could not be armed): the
// goroutine must not block then. mu held.
func (p *progress) armAllLocked() bool {
	all := true
	if d := p.links.Direct(); d != nil {
		for _, l := range d {
			if !l.armRx() {
				all = false
			}
		}
		return all
	}
	for i := 0; i < len(p.hot); {
		l := p.hot[i]
		if !l.armRx() {
			all = false
			i++
			continue
		}
		p.dropHotLocked(l)
	}
	return all
}

// kick makes the set's pollers look at l soon, whether it is armed or not
// (its peer hung up).
func (p *progress) kick(l *link) {
	p.mu.Lock()
	if l.slot >= 0 && p.links.Direct() == nil && l.hotIdx < 0 {
		p.pushHotLocked(l)
	}
	p.mu.Unlock()
	p.interrupt()
}

// openLocked opens the set (openReadySet). mu held.
func (p *progress) openLocked() error {
	if p.opened {
		return nil
	}
	set, err := openReadySet()
	if err != nil {
		return err
	}
	p.wakeMu.Lock()
	p.set, p.opened = set, true
	p.wakeMu.Unlock()
	return nil
}

// add puts a link whose endpoint is attached into the set, hot; from now on
// the set's pollers consume its inbound ring. A link that already ends is
// left out. An error (the kernel refused it) leaves it out too.
func (p *progress) add(l *link) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if l.life.closed() {
		return nil
	}
	if err := p.openLocked(); err != nil {
		return err
	}
	slot, gen := p.links.Add(l)
	reg, err := p.set.add(l.rxData, slot, gen, &p.ctl)
	if err != nil {
		p.links.Undo(slot)
		return err
	}
	l.slot, l.rxReg = slot, reg
	if !p.publishDirectLocked() && l.hotIdx < 0 {
		p.pushHotLocked(l)
	}
	if !p.running {
		p.running = true
		set := p.set
		events := make([]readyEvent, readyBatch)
		go p.handoff.Run(pollerGone, p.ended, func(turn *handoff.Turn) bool {
			return p.serve(set, events, turn)
		})
	} else {
		p.nudge() // a waiting progress goroutine must see the new hot link
	}
	return nil
}

// remove takes a link out of the set; the caller then stops consuming its
// ring. Its doorbell leaves the set explicitly (readySet.remove).
func (p *progress) remove(l *link) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.links.Remove(l.slot, l) {
		return
	}
	p.set.remove(l.rxReg)
	p.dropHotLocked(l)
	l.slot = -1
	p.publishDirectLocked()
	if p.links.Live() == 0 {
		p.interrupt() // the progress goroutine ends, and closes the set
	}
}

// publishDirectLocked refreshes the slot table's direct snapshot and
// reports whether the set is in direct mode. Leaving direct mode, every
// link turns hot (some may have been disarmed by direct polls); in it, the
// hot list is empty. mu held.
func (p *progress) publishDirectLocked() bool {
	direct, left := p.links.Publish()
	if left {
		p.links.Each(func(l *link) {
			if l.hotIdx < 0 {
				p.pushHotLocked(l)
			}
		})
	}
	if direct {
		for len(p.hot) > 0 {
			p.dropHotLocked(p.hot[len(p.hot)-1])
		}
	}
	return direct
}

// waitLocked is readySet.wait for an application poll (mu held). It leaves
// the interruption pending: it is the progress goroutine's, which may be
// waiting on the same set for it.
func (p *progress) waitLocked(out []readyEvent, timeout int) []readyEvent {
	return p.set.wait(out, timeout, false)
}

// serve moves the bytes for as long as no application polls; it returns
// false when the set emptied (the goroutine ends).
func (p *progress) serve(set readySet, events []readyEvent, turn *handoff.Turn) bool {
	spinUntil := time.Now().Add(p.cfg.Spin)
	for i := 1; ; i++ {
		timeout := 0
		if i&15 == 0 && !time.Now().Before(spinUntil) {
			before := p.disarms.Load()
			p.mu.Lock()
			if p.armAllLocked() {
				timeout = -1
				p.asleep.Store(true)
			}
			p.mu.Unlock()
			if timeout < 0 && p.disarms.Load() != before {
				// An application poll disarmed a link meanwhile,
				// perhaps before asleep was set (see disarmed).
				p.asleep.Store(false)
				timeout = 0
			}
		}
		var ready []readyEvent
		if timeout != 0 || p.armedSome() {
			ready = set.wait(events, timeout, true)
			if timeout != 0 {
				p.asleep.Store(false)
			}
		}
		if p.ended() {
			return false
		}
		p.mu.Lock()
		if p.serveLocked(false, ready) {
			spinUntil = time.Now().Add(p.cfg.Spin)
		}
		p.mu.Unlock()
		if turn.Over() {
			return true // an application polls again
		}
		if timeout == 0 {
			runtime.Gosched()
		}
	}
}

// armedSome reports whether some link may be armed, so that a pass must
// ask the kernel which rang.
func (p *progress) armedSome() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.links.Direct() == nil && len(p.hot) < p.links.Live()
}

// ended reports whether the set emptied, and if so closes it and lets the
// progress goroutine and the pull helper end (a later add opens it and
// starts new ones).
func (p *progress) ended() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.links.Live() > 0 {
		return false
	}
	if p.opened {
		p.wakeMu.Lock()
		p.set.close()
		p.set, p.opened = noReadySet, false
		p.wakeMu.Unlock()
	}
	p.links.Reset()
	p.hot = nil
	p.running = false
	p.handoff.Forget()
	p.stopHelper()
	return true
}
