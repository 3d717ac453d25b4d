//go:build linux && !shmportable

package shm_test

import (
	"context"
	"runtime"
	"strings"
	"testing"

	"github.com/godirect/nd"
	"github.com/godirect/nd/ndtest"
	"github.com/godirect/nd/provider/shm"
)

// TestIdleConnectionsGoroutines: idle connections cost at most one
// goroutine per endpoint (its watcher), whatever traffic they carried,
// and a Notify that waits on a completion queue shared by every endpoint
// of a side parks one goroutine (the caller's): the provider's progress
// goroutine moves every link's traffic meanwhile, and the Notify fires
// when a message arrives on any of them.
func TestIdleConnectionsGoroutines(t *testing.T) {
	const n = 24
	before := runtime.NumGoroutine()
	p := testProvider(t, shm.Config{})
	ps := ndtest.NewPeers(t, p, n, 64, true)
	for range 3 {
		ps.Round(t) // traffic both ways: Sends, then their Acks
	}
	// Per provider: the progress goroutine and the listener's; per link
	// (2n): the watcher.
	limit := before + 2*n + 2
	if !shm.SpinUntil(func() bool { return runtime.NumGoroutine() <= limit }) {
		buf := make([]byte, 1<<20)
		t.Fatalf("%d goroutines for %d idle connections in one process (before: %d, want at most %d)\n%s",
			runtime.NumGoroutine(), n, before, limit, buf[:runtime.Stack(buf, true)])
	}
	idle := runtime.NumGoroutine()

	// Drained: what arrived so far has been seen, so Notify waits.
	ndtest.ExpectEmpty(t, ps.PassiveCQ)
	ctx, cancel := context.WithTimeout(context.Background(), ndtest.Timeout)
	defer cancel()
	fired := make(chan error, 1)
	go func() { fired <- ps.PassiveCQ.Notify(ctx, nd.NotifyAny) }()
	// The waiting Notify: its own goroutine, nothing more, once it parked.
	if !shm.SpinUntil(func() bool { return notifyParked() || len(fired) > 0 }) || len(fired) > 0 {
		buf := make([]byte, 1<<20)
		t.Fatalf("Notify did not wait (returned: %d)\n%s", len(fired), buf[:runtime.Stack(buf, true)])
	}
	if g := runtime.NumGoroutine(); g > idle+1 {
		buf := make([]byte, 1<<20)
		t.Fatalf("%d goroutines while one Notify waits on the shared queue of %d endpoints (idle: %d)\n%s",
			g, n, idle, buf[:runtime.Stack(buf, true)])
	}
	last := ps.Active[n-1]
	if err := last.Endpoint.Send(&last.Send, last.SGL, 0); err != nil {
		t.Fatal(err)
	}
	if err := <-fired; err != nil {
		t.Fatalf("Notify: %v", err)
	}
	ndtest.Expect(t, ps.PassiveCQ, &ps.Passive[n-1].Recv, nd.Success, 64)
	ndtest.Expect(t, ps.ActiveCQ, &last.Send, nd.Success, 64)
}

// notifyParked reports whether a goroutine waits in a completion queue's
// Notify.
func notifyParked() bool {
	buf := make([]byte, 1<<20)
	for g := range strings.SplitSeq(string(buf[:runtime.Stack(buf, true)]), "\n\n") {
		if strings.Contains(g, "engine.(*CQ).Notify(") && strings.Contains(g, "[select") {
			return true
		}
	}
	return false
}
