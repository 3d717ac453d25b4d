package shmring

import (
	"errors"
	"testing"
	"time"

	"golang.org/x/sys/windows"
)

// TestDoorbellFromHandle: a doorbell made of a duplicate of another's
// event handle (as the peer process gets it) rings the other's Wait; a
// handle that is not an event is refused.
func TestDoorbellFromHandle(t *testing.T) {
	d, err := NewDoorbell()
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	self := windows.CurrentProcess()
	var h windows.Handle
	if err := windows.DuplicateHandle(self, d.Handle(), self, &h, 0, false, windows.DUPLICATE_SAME_ACCESS); err != nil {
		t.Fatal(err)
	}
	peer, err := DoorbellFromHandle(h)
	if err != nil {
		t.Fatal(err)
	}
	defer peer.Close()
	if err := d.Wait(); err != nil { // DoorbellFromHandle's check rang it
		t.Fatal(err)
	}
	done := make(chan error)
	go func() { done <- d.Wait() }()
	peer.Ring()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Wait did not return after the peer's Ring")
	}

	m, err := windows.CreateMutex(nil, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := DoorbellFromHandle(m); !errors.Is(err, ErrNotEvent) {
		t.Fatalf("a mutex: %v, want ErrNotEvent", err)
	}
}
