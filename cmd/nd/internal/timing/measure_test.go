package timing

import (
	"strings"
	"testing"
	"time"
)

// TestSchedule checks the sweep against ndpingpong's: 1 byte to 4 MiB,
// min(100000, 500*4MiB/size) iterations.
func TestSchedule(t *testing.T) {
	steps := Schedule(DefaultMaxSize, 0)
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

// TestRoundTimes: the median of what was recorded since the last one, the
// first n of a size kept, nothing allocated per round trip, and a row's
// Latency is the median (halved) when there is one, else the mean.
func TestRoundTimes(t *testing.T) {
	r := NewRoundTimes(5)
	for _, d := range []time.Duration{9, 1, 7, 3, 5, 1000, 1000} { // the last two beyond n
		r.Add(d)
	}
	if m := r.median(); m != 5 {
		t.Errorf("median %v, want 5", m)
	}
	if m := r.median(); m != 0 {
		t.Errorf("median after a reset %v, want 0", m)
	}
	if n := testing.AllocsPerRun(100, func() { r.Add(1) }); n != 0 {
		t.Errorf("Add allocates %v times", n)
	}
	var nilTimes *RoundTimes
	if m := nilTimes.median(); m != 0 {
		t.Errorf("median of no RoundTimes %v", m)
	}
	var b strings.Builder
	printRow(&b, sample{size: 8, iters: 4, wall: 400 * time.Microsecond, msgsPerIter: 2, latencyDiv: 2, median: 30 * time.Microsecond})
	printRow(&b, sample{size: 8, iters: 4, wall: 400 * time.Microsecond, msgsPerIter: 2, latencyDiv: 2})
	rows := strings.Split(strings.TrimSpace(b.String()), "\n")
	if f := strings.Fields(rows[0]); len(f) != 5 || f[2] != "15.00" {
		t.Errorf("row with a median: %q, want latency 15.00", rows[0])
	}
	if f := strings.Fields(rows[1]); len(f) != 5 || f[2] != "50.00" {
		t.Errorf("row without: %q, want latency 50.00 (the mean)", rows[1])
	}
}
