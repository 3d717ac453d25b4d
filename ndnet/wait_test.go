package ndnet

import (
	"testing"
	"time"
)

// TestSpinWindowAdapts: the polling window widens to cover waits that
// slept yet ended within Spin, never beyond Spin, and halves after waits
// longer than Spin, never below Spin/spinFloor.
func TestSpinWindowAdapts(t *testing.T) {
	spin := DefaultConfig().Spin
	if spin != 300*time.Microsecond || spin/spinFloor != 20*time.Microsecond {
		t.Fatalf("the steps below assume Spin 300µs and a floor of 20µs, not %v and %v", spin, spin/spinFloor)
	}
	w := spinWindow(spin / spinFloor)
	steps := []struct{ wait, want time.Duration }{
		{30 * time.Microsecond, 40 * time.Microsecond},   // doubled: 2x20 > 30+7.5
		{100 * time.Microsecond, 125 * time.Microsecond}, // covers the wait with a quarter to spare
		{250 * time.Microsecond, spin},                   // 312.5 capped at Spin
		{spin, spin},
		{2 * time.Millisecond, 150 * time.Microsecond},
		{time.Second, 75 * time.Microsecond},
		{time.Second, 37500 * time.Nanosecond},
		{time.Second, 20 * time.Microsecond}, // 18.75 raised to the floor
		{time.Second, 20 * time.Microsecond},
	}
	for i, s := range steps {
		w.adapt(s.wait, spin)
		if time.Duration(w) != s.want {
			t.Fatalf("step %d: after a wait of %v the window is %v, want %v", i, s.wait, time.Duration(w), s.want)
		}
	}
}
