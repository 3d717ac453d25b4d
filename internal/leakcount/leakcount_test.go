package leakcount

import (
	"bytes"
	"testing"
	"time"
)

// TestCountsInternalGoroutines: a goroutine parked in this internal
// package counts, and stops counting once it ended; the caller's does not.
func TestCountsInternalGoroutines(t *testing.T) {
	before := len(ProviderGoroutines())
	stop, parked := make(chan struct{}), make(chan struct{})
	go func() {
		close(parked)
		<-stop
	}()
	<-parked
	// The goroutine may not have reached its receive yet; its stack names
	// this package either way.
	gs := ProviderGoroutines()
	if len(gs) != before+1 {
		t.Fatalf("%d goroutines with the parked one, want %d", len(gs), before+1)
	}
	found := false
	for _, g := range gs {
		found = found || bytes.Contains(g, []byte("leakcount.TestCountsInternalGoroutines.func1"))
	}
	if !found {
		t.Fatal("the parked goroutine's stack is not among them")
	}
	close(stop)
	deadline := time.Now().Add(10 * time.Second)
	for len(ProviderGoroutines()) != before {
		// The goroutine ends right after stop closes; each look is a
		// stack dump, bounded by the deadline.
		if time.Now().After(deadline) {
			t.Fatal("the ended goroutine still counts")
		}
	}
}
