package ndnet

import (
	"sync"
	"time"
)

// deadline is one direction's deadline: a channel closed when the deadline
// passes, which blocked calls select on, and a token then put in the
// direction's wake channel, which ends its call's Notify (wait.go). Setting a deadline allocates (a
// timer, and a fresh channel after one expired); waiting does not.
type deadline struct {
	mu     sync.Mutex
	timer  *time.Timer
	cancel chan struct{} // closed when the deadline has passed
	wake   chan struct{} // the direction's wake channel
}

func newDeadline(wake chan struct{}) deadline {
	return deadline{cancel: make(chan struct{}), wake: wake}
}

// set sets the deadline to t; the zero time means none. A time in the past
// expires it at once, unblocking the calls waiting on it.
func (d *deadline) set(t time.Time) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.timer != nil && !d.timer.Stop() {
		<-d.cancel // the timer fired: wait until its function closed the channel
	}
	d.timer = nil
	expired := isClosed(d.cancel)
	if t.IsZero() {
		if expired {
			d.cancel = make(chan struct{})
		}
		return
	}
	if dur := time.Until(t); dur > 0 {
		if expired {
			d.cancel = make(chan struct{})
		}
		ch, w := d.cancel, d.wake
		d.timer = time.AfterFunc(dur, func() {
			close(ch)
			wake(w)
		})
		return
	}
	if !expired {
		close(d.cancel)
		wake(d.wake)
	}
}

// wait returns the channel that is closed when the deadline passes.
func (d *deadline) wait() chan struct{} {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.cancel
}

// isClosed reports whether ch is closed.
func isClosed(ch chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}
