package ndnet

// Waiting: a Read, Write or Close that cannot go on first polls the
// completion queue, moving the bytes itself, then sleeps in the queue's
// Notify, so that the completion it waits for wakes it directly. How long a
// Read or Write polls adapts per direction (spinWindow), up to Config.Spin.
// Another goroutine that processes completions for it (the other
// direction, the progress goroutine), Close, CloseWrite and a passing
// deadline put a token in its wake channel (capacity one), which ends that
// Notify as a cancellation would. The progress goroutine sleeps in Notify
// only while no Read, Write or Close has polled or waited for a while
// (progressTakeover): two goroutines in Notify would both wake on each
// completion, and a Notify waiter makes the provider move the bytes in its
// own goroutine instead of in the polls of a spinning Read.

import (
	"context"
	"errors"
	"runtime"
	"time"

	"github.com/godirect/nd"
)

// progressTakeover is how long the application may go without polling or
// waiting before the progress goroutine waits in Notify in its place: long
// against a round trip, so that it wakes about once per this span while
// the application is busy, short enough that a peer waiting for an
// acknowledgment of its end of stream from an idle application is answered
// promptly.
const progressTakeover = time.Millisecond

// spinFloor divides Config.Spin into the shortest polling window: the one
// a direction starts with, and the least it shrinks to.
const spinFloor = 15

// spinWindow is how long a blocked Read (or Write) polls before it sleeps,
// adapted to how long that direction's waits last, as a hypervisor adapts
// how long an idle virtual processor polls before it halts. A wait that
// slept and still ended within Config.Spin widens the window to cover it
// with a quarter to spare (at least doubling it): polling that long would
// have saved the sleep and its wake-up, which costs tens of microseconds
// in a virtual machine, and for each wake-up saved here the peer's next
// wait is shorter too. A wait longer than Spin halves it, down to
// Spin/spinFloor, so that a peer idle for long costs short polls. A wait
// that ended while polling leaves it as it is. It is guarded by the lock
// of its direction (rmu, wmu).
type spinWindow time.Duration

// adapt updates the window after a wait of total length d that slept.
func (s *spinWindow) adapt(d, spin time.Duration) {
	w := time.Duration(*s)
	if d > spin {
		w = max(w/2, spin/spinFloor)
	} else {
		w = min(max(2*w, d+d/4), spin)
	}
	*s = spinWindow(w)
}

// waiter paces one blocked Read or Write: it polls (the caller's loop polls
// the completion queue) for the direction's window, then sleeps until
// woken.
type waiter struct {
	window *spinWindow
	start  time.Time
	polls  int
	slept  bool
}

// done ends one wait that the caller got through (bytes moved): a wait that
// slept adapts the window. It readies the waiter for the next wait.
func (w *waiter) done(c *Conn) {
	if w.slept && c.cfg.Spin > 0 {
		w.window.adapt(time.Since(w.start), c.cfg.Spin)
	}
	w.polls = 0
	w.slept = false
}

// wait returns after one poll's pause while polling, or once the
// completion queue fired or ch, dl or closed did (Read and Write pass
// c.closedCh: Close ends their wait); it reports whether it slept.
func (w *waiter) wait(c *Conn, ch, dl, closed chan struct{}) bool {
	if c.cfg.Spin > 0 {
		if w.polls == 0 {
			w.start = time.Now()
		}
		w.polls++
		if w.polls%8 != 0 || time.Since(w.start) < time.Duration(*w.window) {
			runtime.Gosched()
			return false
		}
	}
	w.slept = true
	c.sleep(ch, dl, closed)
	return true
}

// sleep waits in the completion queue's Notify until a completion arrives
// or a token comes in ch; a token already there, or dl or closed being
// closed, returns at once (Close passes nil for closed). The caller polls
// next.
func (c *Conn) sleep(ch, dl, closed chan struct{}) {
	select {
	case <-ch:
		return
	case <-dl:
		return
	case <-closed:
		return
	default:
	}
	c.notifying.Add(1)
	err := c.cq.Notify(wakeContext(ch), nd.NotifyAny)
	if c.notifying.Add(-1) == 0 && c.runWaits.Load() {
		wake(c.appLeft) // the progress goroutine looks again (run)
	}
	if err == nil || errors.Is(err, nd.ErrCanceled) {
		return
	}
	// The queue failed: the progress goroutine records why and wakes the
	// waiters; until then, wait as Notify cannot.
	select {
	case <-ch:
	case <-dl:
	case <-closed:
	}
}

// wake puts a token in ch, unless one is there already.
func wake(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// wakeContext is the context of a Notify that a token in the channel ends:
// its Done is the channel itself, which the Notify, its one receiver,
// takes the token from. It is not a general context (its channel is never
// closed, and Err reports a cancellation even before the token came): it
// serves only CompletionQueue.Notify, which receives from Done once and
// reads Err only after that. Being a channel, it fits in an interface
// without allocating.
type wakeContext chan struct{}

var errWoken = errors.New("ndnet: woken")

func (wakeContext) Deadline() (time.Time, bool) { return time.Time{}, false }
func (w wakeContext) Done() <-chan struct{}     { return w }
func (wakeContext) Err() error                  { return errWoken }
func (wakeContext) Value(any) any               { return nil }

var _ context.Context = wakeContext(nil)
