//go:build unix

package shmring

import (
	"errors"
	"os"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func newPipeBell(t *testing.T) *PipeBell {
	t.Helper()
	b, err := NewPipeBell()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

func TestCrossGoroutinePipeBell(t *testing.T) {
	testStream(t, newPipeBell(t), newPipeBell(t), 0, 20000)
}

// TestPipeBellPassed: a doorbell made of duplicates of another's
// descriptors (as a peer receives them) rings the other's Wait.
func TestPipeBellPassed(t *testing.T) {
	b := newPipeBell(t)
	r, w := b.Fds()
	dr, err := unix.Dup(r)
	if err != nil {
		t.Fatal(err)
	}
	dw, err := unix.Dup(w)
	if err != nil {
		t.Fatal(err)
	}
	peer, err := PipeBellFromFDs(dr, dw)
	if err != nil {
		t.Fatal(err)
	}
	defer peer.Close()
	done := make(chan error)
	go func() { done <- b.Wait() }()
	peer.Ring()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Wait did not return after the peer's Ring")
	}
}

func TestPipeBellClose(t *testing.T) {
	b, err := NewPipeBell()
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error)
	go func() { done <- b.Wait() }()
	b.Close()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("Wait returned nil after Close")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Wait did not return after Close")
	}
	b.Ring() // ignored
}

// TestNotPipe: descriptors a peer could pass instead of a pipe's two ends
// are refused, and closed.
func TestNotPipe(t *testing.T) {
	pipe := func() (int, int) {
		var p [2]int
		if err := unix.Pipe(p[:]); err != nil {
			t.Fatal(err)
		}
		return p[0], p[1]
	}
	file := func() int {
		f, err := os.CreateTemp(t.TempDir(), "notpipe")
		if err != nil {
			t.Fatal(err)
		}
		fd, err := unix.Dup(int(f.Fd()))
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		return fd
	}
	r1, w1 := pipe()
	r2, w2 := pipe()
	r3, w3 := pipe()
	for _, tc := range []struct {
		name string
		r, w int
	}{
		{"ends of two pipes", r1, w2},
		{"ends swapped", w3, r3},
		{"a file", file(), file()},
	} {
		if _, err := PipeBellFromFDs(tc.r, tc.w); !errors.Is(err, ErrNotPipe) {
			t.Errorf("%s: %v, want ErrNotPipe", tc.name, err)
		}
		if unix.Close(tc.r) == nil || unix.Close(tc.w) == nil {
			t.Errorf("%s: the descriptors were left open", tc.name)
		}
	}
	unix.Close(r2)
	unix.Close(w1)
}

// TestPipeBellFullNeverBlocks: rings past what the pipe holds, with nobody
// waiting, return at once (the extra ones are dropped), and a Wait then
// still sees the doorbell rung.
func TestPipeBellFullNeverBlocks(t *testing.T) {
	b := newPipeBell(t)
	done := make(chan struct{})
	go func() {
		for range 1 << 18 { // far more than a pipe's buffer (64 KiB on Linux, 16-64 KiB on the BSDs)
			b.Ring()
		}
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		t.Fatal("Ring blocked on a full pipe")
	}
	if err := b.Wait(); err != nil {
		t.Fatal(err)
	}
}

// TestPipeBellRingAllocatesNothing: Ring is on the data path.
func TestPipeBellRingAllocatesNothing(t *testing.T) {
	b := newPipeBell(t)
	if n := testing.AllocsPerRun(1000, func() {
		b.Ring()
		b.Wait()
	}); n != 0 {
		t.Fatalf("Ring and Wait allocate %v times", n)
	}
}
