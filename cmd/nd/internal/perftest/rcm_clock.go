package perftest

// nd perf -R by time (-D), as perftest measures it: the traffic runs for
// the duration, and the iterations count only between a margin after the
// start and a margin before the end (a quarter of the duration, in whole
// seconds, as perftest's default).

import (
	"time"

	"github.com/godirect/nd/cmd/nd/internal/timing"
)

// rcmClock is the duration mode's clock of one size.
type rcmClock struct {
	start       timing.Instant
	dur, margin time.Duration
	state       int // rcmBefore, rcmSampling, rcmAfter or rcmEnded
	count0      int // the count when the sample began
	t0, t1      time.Duration
	n           int // iterations in the sample
}

// The states of an rcmClock.
const (
	rcmBefore = iota
	rcmSampling
	rcmAfter
	rcmEnded
)

// newRcmClock returns the clock of a run of dur, nil when dur is 0 (the
// run goes by iterations).
func newRcmClock(dur time.Duration) *rcmClock {
	if dur == 0 {
		return nil
	}
	secs := int(dur / time.Second)
	return &rcmClock{dur: dur, margin: time.Duration(secs/4) * time.Second}
}

// begin starts the clock.
func (k *rcmClock) begin() { k.start = timing.Now() }

// tick moves the clock on with count, the iterations done so far, and
// reports whether the run has ended. A nil clock never ends.
func (k *rcmClock) tick(count int) bool {
	if k == nil {
		return false
	}
	now := timing.Since(k.start)
	if k.state == rcmBefore && now >= k.margin {
		k.state, k.t0, k.count0 = rcmSampling, now, count
	}
	if k.state == rcmSampling && now >= k.dur-k.margin {
		k.state, k.t1, k.n = rcmAfter, now, count-k.count0
	}
	if k.state == rcmAfter && now >= k.dur {
		k.state = rcmEnded
	}
	return k.state == rcmEnded
}

// sample returns the iterations in the sample and its length.
func (k *rcmClock) sample() (int, time.Duration) { return k.n, k.t1 - k.t0 }
