package shmring

import (
	"testing"
	"time"
)

// The doorbell of the platform: an eventfd on Linux, a pipe on the other
// Unix systems, an event on Windows.

func TestCrossGoroutineDoorbell(t *testing.T) {
	d1, err := NewDoorbell()
	if err != nil {
		t.Fatal(err)
	}
	defer d1.Close()
	d2, err := NewDoorbell()
	if err != nil {
		t.Fatal(err)
	}
	defer d2.Close()
	testStream(t, d1, d2, 0, 20000)
}

func TestDoorbellClose(t *testing.T) {
	d, err := NewDoorbell()
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error)
	go func() { done <- d.Wait() }()
	d.Close()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("Wait returned nil after Close")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Wait did not return after Close")
	}
	d.Ring() // ignored
}
