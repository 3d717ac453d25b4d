package tcp_test

// Helpers shared by the hostile-peer and peer-killed tests: completion
// waits with deadlines and the goroutine leak check.

import (
	"bytes"
	"context"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/godirect/nd"
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
var providerStackMarkers = []string{
	"github.com/godirect/nd/provider/tcp.",
	"github.com/godirect/nd/internal/engine.",
}

// providerGoroutines returns the stacks of the goroutines running code of
// provider/tcp or internal/engine.
func providerGoroutines() []string {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	var out []string
	for _, g := range bytes.Split(buf, []byte("\n\n")) {
		s := string(g)
		for _, m := range providerStackMarkers {
			if strings.Contains(s, m) {
				out = append(out, s)
				break
			}
		}
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
