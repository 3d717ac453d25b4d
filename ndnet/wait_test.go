package ndnet

import (
	"testing"
	"time"
)

// TestSpinWindowAdapts: the polling window widens to cover waits that
// slept yet ended within Spin, never beyond Spin, and halves after waits
// longer than Spin, never below Spin/spinFloor.
func TestSpinWindowAdapts(t *testing.T) {
	const spin = 500 * time.Microsecond
	w := spinWindow(spin / spinFloor)
	steps := []struct{ wait, want time.Duration }{
		{30 * time.Microsecond, 40 * time.Microsecond},   // doubled: 2x20 > 30+7.5
		{100 * time.Microsecond, 125 * time.Microsecond}, // covers the wait with a quarter to spare
		{450 * time.Microsecond, spin},                   // 562.5 capped at Spin
		{spin, spin},
		{2 * time.Millisecond, 250 * time.Microsecond},
		{time.Second, 125 * time.Microsecond},
		{time.Second, 62500 * time.Nanosecond},
		{time.Second, 31250 * time.Nanosecond},
		{time.Second, 20 * time.Microsecond}, // the floor
		{time.Second, 20 * time.Microsecond},
	}
	for i, s := range steps {
		w.adapt(s.wait, spin)
		if time.Duration(w) != s.want {
			t.Fatalf("step %d: after a wait of %v the window is %v, want %v", i, s.wait, time.Duration(w), s.want)
		}
	}
}
