package tcp_test

// Helpers shared by the hostile-peer and peer-killed tests: completion
// waits with deadlines and the goroutine leak check.

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/godirect/nd"
	"github.com/godirect/nd/internal/leakcount"
)

// waitResult returns the next completion of cq, or nil if none arrives
// before deadline.
func waitResult(cq nd.CompletionQueue, deadline time.Time) *nd.Result {
	var out [1]*nd.Result
	for {
		if cq.GetResults(out[:]) == 1 {
			return out[0]
		}
		if !time.Now().Before(deadline) {
			return nil
		}
		// Notify fires at once for a completion that arrived after the
		// GetResults above; the deadline bounds the wait.
		ctx, cancel := context.WithDeadline(context.Background(), deadline)
		cq.Notify(ctx, nd.NotifyAny)
		cancel()
	}
}

// providerStackMarkers name the packages whose goroutines must not outlive
// a connection: the transport and the engine (not the tests, whose frames
// are in package tcp_test).
var providerStackMarkers = [][]byte{
	[]byte("github.com/godirect/nd/provider/tcp."),
	[]byte("github.com/godirect/nd/internal/engine."),
}

// providerGoroutines returns the stacks of the goroutines running code of
// provider/tcp or internal/engine.
func providerGoroutines() []string {
	var out []string
	for _, g := range leakcount.Goroutines(providerStackMarkers...) {
		out = append(out, string(g))
	}
	return out
}

// settleProviderGoroutines polls, until d passes, for the number of
// provider goroutines to drop to at most max, and returns the last list.
func settleProviderGoroutines(max int, d time.Duration) []string {
	deadline := time.Now().Add(d)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		gs := providerGoroutines()
		if len(gs) <= max || !time.Now().Before(deadline) {
			return gs
		}
		<-tick.C
	}
}

// checkNoProviderLeak fails the test if more provider goroutines than
// baseline remain after d.
func checkNoProviderLeak(t testing.TB, baseline int, d time.Duration) {
	t.Helper()
	if gs := settleProviderGoroutines(baseline, d); len(gs) > baseline {
		t.Errorf("%d goroutines in provider/tcp or internal/engine remain (baseline %d) after %v:\n%s",
			len(gs), baseline, d, strings.Join(gs, "\n\n"))
	}
}
