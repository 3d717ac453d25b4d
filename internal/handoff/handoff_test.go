package handoff

import (
	"testing"
	"time"
)

// forever is a hand-off period no test waits out: a Run that needs it to
// pass hangs until the test binary's timeout.
const forever = time.Hour

func TestTurnOver(t *testing.T) {
	h := New()
	turn := Turn{h: h}
	if turn.Over() {
		t.Fatal("Over with no poll since the turn began")
	}
	h.Polled()
	if !turn.Over() {
		t.Fatal("not Over after a poll")
	}
	if turn.Over() {
		t.Fatal("Over again with no new poll")
	}
	h.Watch()
	h.Polled()
	if turn.Over() {
		t.Fatal("Over while an application waits in Notify")
	}
	h.Unwatch()
	if !turn.Over() {
		t.Fatal("not Over once the waiter left, with a poll not yet seen")
	}
}

func TestTurnOverWhileAPollLasts(t *testing.T) {
	h := New()
	turn := Turn{h: h}
	h.PollStart()
	for i := range 3 {
		if !turn.Over() {
			t.Fatalf("not Over at check %d while a poll is under way", i)
		}
	}
	h.PollEnd()
	if !turn.Over() {
		t.Fatal("not Over after the poll ended, with its end not yet seen")
	}
	if turn.Over() {
		t.Fatal("Over with no poll under way and none since")
	}
}

func TestRunServesOnceThePollsStop(t *testing.T) {
	h := New()
	served := 0
	h.Run(time.Microsecond, func() bool { return false }, func(*Turn) bool {
		served++
		return false
	})
	if served != 1 {
		t.Fatalf("serve ran %d times, want 1", served)
	}
}

func TestRunServesAtOnceForAWaiter(t *testing.T) {
	h := New()
	h.Watch()
	served := 0
	h.Run(forever, func() bool { return false }, func(*Turn) bool {
		served++
		return served < 3
	})
	if served != 3 {
		t.Fatalf("serve ran %d times, want 3 (until it returned false)", served)
	}
}

// TestRunLeavesTheBytesToPolls: Run serves only after a sleep during which
// no application poll started, ended or was under way.
func TestRunLeavesTheBytesToPolls(t *testing.T) {
	for _, tc := range []struct {
		name string
		// during is what the application does during each sleep of Run,
		// by sleep (from 1); serve must first run after sleep want.
		during map[int]func(*Handoff)
		want   int
	}{
		{"short polls", map[int]func(*Handoff){1: (*Handoff).Polled, 2: (*Handoff).Polled}, 3},
		// A poll from the first sleep into the third: none starts or
		// ends during the second, yet the application moves the bytes.
		{"one long poll", map[int]func(*Handoff){1: (*Handoff).PollStart, 3: (*Handoff).PollEnd}, 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := New()
			sleeps := 0
			ended := func() bool {
				sleeps++
				if f := tc.during[sleeps]; f != nil {
					f(h)
				}
				return false
			}
			served := 0
			h.Run(time.Microsecond, ended, func(*Turn) bool {
				served++
				return false
			})
			if sleeps != tc.want || served != 1 {
				t.Fatalf("Run slept %d times and served %d, want %d and 1", sleeps, served, tc.want)
			}
		})
	}
}

func TestWakeEndsTheSleep(t *testing.T) {
	h := New()
	h.Wake()
	h.Run(forever, func() bool { return true }, func(*Turn) bool {
		t.Error("serve ran, want Run to end at its first check")
		return false
	})
}

func TestForgetDropsAWake(t *testing.T) {
	h := New()
	h.Wake()
	h.Forget()
	select {
	case <-h.wake:
		t.Fatal("a Wake outlived Forget")
	default:
	}
}

// BenchmarkPolled is the cost of recording a poll from every processor at
// once, as pollers of one transport's completion queues do.
func BenchmarkPolled(b *testing.B) {
	h := New()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			h.Polled()
		}
	})
}
