package shm

import (
	"testing"

	"github.com/godirect/nd/internal/shmring"
)

// TestReadySetWindows: a rung doorbell's link is reported with its slot
// and generation, once per wait however often it rang before; a wake ends
// a blocking wait with nothing and is consumed only by a wait that clears
// it; a non-blocking wait never blocks.
func TestReadySetWindows(t *testing.T) {
	s, err := openReadySet()
	if err != nil {
		t.Fatal(err)
	}
	defer s.close()
	b, err := shmring.NewDoorbell()
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	var ctl readyEvent
	if _, err := s.add(b, 3, 7, &ctl); err != nil {
		t.Fatal(err)
	}
	out := make([]readyEvent, 4)
	if got := s.wait(out, 0, false); len(got) != 0 {
		t.Fatalf("a wait before any ring = %v", got)
	}
	for range 5 {
		b.Ring()
	}
	got := s.wait(out, -1, true)
	if len(got) != 1 || got[0] != (readyEvent{Fd: 3, Pad: 7}) {
		t.Fatalf("wait after the rings = %v, want [{3 7}]", got)
	}
	// The rings may have been seen twice (once while the first was being
	// queued), never more, and never as another link.
	for _, e := range s.wait(out, 0, false) {
		if e != (readyEvent{Fd: 3, Pad: 7}) {
			t.Fatalf("wait = %v", e)
		}
	}
	s.wake()
	if got := s.wait(out, 0, false); len(got) > 1 {
		t.Fatalf("a non-blocking wait after wake = %v", got)
	}
	if got := s.wait(out, -1, true); len(got) > 1 {
		t.Fatalf("a blocking wait after wake = %v", got)
	}
	s.r.mu.Lock()
	woken := s.r.woken
	s.r.mu.Unlock()
	if woken {
		t.Fatal("the clearing wait left the wake pending")
	}
}
