package ndtest

import (
	"bytes"
	"os"
	"runtime"
	"testing"
	"time"
)

// LeakSnapshot is what CheckLeaks compares against: the goroutines running
// the code of godirect's providers and engine, and the process's open file
// descriptors (Linux; elsewhere -1).
type LeakSnapshot struct {
	Goroutines  int
	Descriptors int
}

// leakMarkers are the packages whose goroutines count: a provider's or the
// engine's goroutine left behind is a leak, the test's own are not.
var leakMarkers = [][]byte{
	[]byte("github.com/godirect/nd/provider/"),
	[]byte("github.com/godirect/nd/internal/"),
}

// TakeLeakSnapshot counts what CheckLeaks watches now.
func TakeLeakSnapshot() LeakSnapshot {
	return LeakSnapshot{Goroutines: len(providerGoroutines()), Descriptors: openDescriptors()}
}

// providerGoroutines returns the stacks of the goroutines, other than the
// caller's, that run provider or engine code.
func providerGoroutines() [][]byte {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	var out [][]byte
	for i, g := range bytes.Split(buf, []byte("\n\n")) {
		if i == 0 {
			continue // this goroutine
		}
		for _, m := range leakMarkers {
			if bytes.Contains(g, m) {
				out = append(out, g)
				break
			}
		}
	}
	return out
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
		gs := providerGoroutines()
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
