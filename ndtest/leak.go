package ndtest

import (
	"bytes"
	"os"
	"runtime"
	"testing"
	"time"

	"github.com/godirect/nd/internal/leakcount"
)

// LeakSnapshot is what CheckLeaks compares against: the goroutines running
// the code of godirect's providers and engine, and the process's open file
// descriptors (Linux; elsewhere -1).
type LeakSnapshot struct {
	Goroutines  int
	Descriptors int
}

// TakeLeakSnapshot counts what CheckLeaks watches now.
func TakeLeakSnapshot() LeakSnapshot {
	return LeakSnapshot{Goroutines: len(leakcount.ProviderGoroutines()), Descriptors: openDescriptors()}
}

// openDescriptors counts /proc/self/fd, or returns -1 where there is none.
// A Windows program has none of its own: under Wine the directory is
// Wine's, whose descriptors for the program's sockets it opens and closes
// on its own schedule (after a burst of connections the count moves by
// tens for longer than Timeout, up and down, without growing).
func openDescriptors() int {
	if runtime.GOOS == "windows" {
		return -1
	}
	es, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return -1
	}
	return len(es) - 1 // the directory being read
}

// CheckLeaks fails t if, within Timeout, the goroutines of provider and
// engine code and the open descriptors do not come back to at most what
// base counted: it polls with a growing pause (a bounded wait for closes
// that finish in the background, not a fixed sleep) and reports the
// remaining goroutines' stacks.
func CheckLeaks(t testing.TB, base LeakSnapshot) {
	t.Helper()
	deadline := time.Now().Add(Timeout)
	pause := time.Millisecond
	for {
		gs := leakcount.ProviderGoroutines()
		fds := openDescriptors()
		if len(gs) <= base.Goroutines && fds <= base.Descriptors {
			return
		}
		if time.Now().After(deadline) {
			var b bytes.Buffer
			for _, g := range gs {
				b.Write(g)
				b.WriteString("\n\n")
			}
			t.Fatalf("leak: %d provider goroutines (had %d), %d descriptors (had %d) after %v; goroutines:\n%s",
				len(gs), base.Goroutines, fds, base.Descriptors, Timeout, b.Bytes())
		}
		time.Sleep(pause)
		pause = min(2*pause, 50*time.Millisecond)
	}
}
