package session

import (
	"testing"
)

// TestSchedule checks the sweep against ndpingpong's: 1 byte to 4 MiB,
// min(100000, 500*4MiB/size) iterations.
func TestSchedule(t *testing.T) {
	steps := Schedule(defaultMaxSize, 0)
	if len(steps) != 23 {
		t.Fatalf("%d sizes, want 23", len(steps))
	}
	for i, s := range steps {
		want := min(100000, 500*(4<<20)/s.Size)
		if s.Size != 1<<i || s.Iters != want {
			t.Errorf("step %d = %+v, want {%d %d}", i, s, 1<<i, want)
		}
	}
	if got := Schedule(1000, 3); len(got) != 10 || got[9] != (step{Size: 512, Iters: 3}) {
		t.Errorf("schedule(1000, 3) = %v", got)
	}
	if got := Schedule(1, 0); len(got) != 1 || got[0] != (step{Size: 1, Iters: 100000}) {
		t.Errorf("schedule(1, 0) = %v", got)
	}
	if Warmups(0) != 1000 || Warmups(7) != 7 {
		t.Errorf("warmups(0), warmups(7) = %d, %d", Warmups(0), Warmups(7))
	}
}
