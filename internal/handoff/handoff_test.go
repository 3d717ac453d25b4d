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
	turn := Turn{h: h, seen: h.Polls()}
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
	turn := Turn{h: h, seen: h.Polls()}
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

func TestRunLeavesTheBytesToPolls(t *testing.T) {
	h := New()
	sleeps := 0
	ended := func() bool {
		// Each sleep of Run ends here: an application polled during
		// the first two, so serve must not run before the third.
		sleeps++
		if sleeps <= 2 {
			h.Polled()
		}
		return false
	}
	served := 0
	h.Run(time.Microsecond, ended, func(*Turn) bool {
		served++
		return false
	})
	if sleeps != 3 || served != 1 {
		t.Fatalf("Run slept %d times and served %d, want 3 and 1", sleeps, served)
	}
}

func TestRunLeavesALongPollAlone(t *testing.T) {
	h := New()
	sleeps := 0
	ended := func() bool {
		// A poll starts during the first sleep and lasts into the third:
		// no poll starts or ends during the second, yet the application
		// is moving the bytes, so serve must not run before the fourth.
		sleeps++
		switch sleeps {
		case 1:
			h.PollStart()
		case 3:
			h.PollEnd()
		}
		return false
	}
	served := 0
	h.Run(time.Microsecond, ended, func(*Turn) bool {
		served++
		return false
	})
	if sleeps != 4 || served != 1 {
		t.Fatalf("Run slept %d times and served %d, want 4 and 1", sleeps, served)
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
