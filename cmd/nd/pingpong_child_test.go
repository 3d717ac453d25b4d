package main

import (
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/godirect/nd/cmd/nd/internal/timing"
)

// serverLineRE matches the first line of nd pingpong with a child server
// and captures the process id, the provider and the pace.
var serverLineRE = regexp.MustCompile(`^Server: process (\d+) on 127\.0\.0\.1:\d+ \(provider (\w+)\); (.*)$`)

// checkServerLine checks that out starts with the line that names the
// server's child process (another process than this one), its provider
// and pace, and returns the rest of out.
func checkServerLine(t *testing.T, out, provider, pace string) string {
	t.Helper()
	first, rest, _ := strings.Cut(out, "\n")
	m := serverLineRE.FindStringSubmatch(first)
	if m == nil {
		t.Fatalf("the first line is not the server's:\n%s", out)
	}
	if pid, _ := strconv.Atoi(m[1]); pid == os.Getpid() || pid < 1 {
		t.Errorf("the server's process id %s is this process's or none", m[1])
	}
	if m[2] != provider || m[3] != pace {
		t.Errorf("the server line names provider %q and pace %q, want %q and %q", m[2], m[3], provider, pace)
	}
	return rest
}

// TestPingpongChild runs nd pingpong as a newcomer does, without -s, -c
// or -in-process: the server is a child process (the test binary, see
// TestMain) and each size runs for -D.
func TestPingpongChild(t *testing.T) {
	for _, tt := range []struct {
		name string
		args []string
		pace string
	}{
		{"timed", []string{"-max", "4K", "-D", "0.05"}, "each size runs for 50ms"},
		{"blocking", []string{"-b", "-n", "2", "-q", "4", "-max", "4K", "-D", "0.02"}, "each size runs for 20ms"},
		{"spin", []string{"-spin", "1ns", "-max", "4K", "-D", "0.02"}, "each size runs for 20ms"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := runNd(t, append([]string{"pingpong", "-timeout", "60s"}, tt.args...)...)
			if code != 0 {
				t.Fatalf("exit status %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
			}
			if stderr != "" {
				t.Errorf("stderr is not empty:\n%s", stderr)
			}
			checkTable(t, checkServerLine(t, stdout, "tcp", tt.pace), 4<<10, 0)
		})
	}
	t.Run("shm", func(t *testing.T) {
		skipUnsupported(t, "shm")
		code, stdout, stderr := runNd(t, "pingpong", "-provider", "shm", "-max", "64K", "-iters", "30", "-timeout", "60s")
		if code != 0 {
			t.Fatalf("exit status %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
		}
		checkTable(t, checkServerLine(t, stdout, "shm", "ndpingpong's iteration counts"), 64<<10, 30)
	})
}

// timedWriter records when each Write arrives.
type timedWriter struct {
	mu     sync.Mutex
	start  time.Time
	writes []string
	at     []time.Duration
}

func (w *timedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.writes = append(w.writes, string(p))
	w.at = append(w.at, time.Since(w.start))
	return len(p), nil
}

// TestPingpongProgress checks that a row is written as its size completes:
// each row in a Write of its own, at least -D after the one before.
func TestPingpongProgress(t *testing.T) {
	const d = 100 * time.Millisecond
	w := &timedWriter{start: time.Now()}
	var stderr strings.Builder
	if code := run([]string{"pingpong", "-max", "8", "-D", "0.1", "-timeout", "60s"}, w, &stderr); code != 0 {
		t.Fatalf("exit status %d\nstderr:\n%s", code, stderr.String())
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	checkTable(t, checkServerLine(t, strings.Join(w.writes, ""), "tcp", "each size runs for 100ms"), 8, 0)
	// The server line, the header, the column line and the four rows.
	if len(w.writes) != 7 {
		t.Fatalf("%d writes, want 7: %q", len(w.writes), w.writes)
	}
	for i := 3; i < 7; i++ {
		if !strings.HasPrefix(w.writes[i], fmt.Sprintf(" %9d ", 1<<(i-3))) {
			t.Errorf("write %d is %q, not the row of %d bytes", i, w.writes[i], 1<<(i-3))
		}
		if gap := w.at[i] - w.at[i-1]; gap < d {
			t.Errorf("write %d came %v after the one before, want at least %v", i, gap, d)
		}
	}
}

// TestPingpongTimedServerClient runs a timed sweep between "nd pingpong
// -s" and "nd pingpong -c" over the loop provider: the server echoes until
// the client's message of 0 bytes and reports every message it echoed.
func TestPingpongTimedServerClient(t *testing.T) {
	serverOut := newSyncBuffer()
	var serverErr strings.Builder
	served := make(chan int, 1)
	go func() {
		served <- run([]string{"pingpong", "-provider", "loop", "-s", "-p", "54997", "-timeout", "20s"}, serverOut, &serverErr)
	}()
	select {
	case <-serverOut.written:
	case code := <-served:
		t.Fatalf("the server exited with %d before listening: %s", code, serverErr.String())
	}
	code, stdout, stderr := runNd(t, "pingpong", "-provider", "loop", "-c", "-max", "64", "-D", "0.02", "127.0.0.1:54997")
	if code != 0 {
		t.Fatalf("client: exit status %d\nstderr:\n%s", code, stderr)
	}
	counts := checkTable(t, stdout, 64, 0)
	if code := <-served; code != 0 {
		t.Fatalf("server: exit status %d\nstderr:\n%s", code, serverErr.String())
	}
	echoed := timing.WarmupIterations
	for _, n := range counts {
		echoed += n
	}
	out := serverOut.String()
	for _, want := range []string{
		"messages of up to 64 bytes until one of 0 bytes\n",
		fmt.Sprintf("Echoed %d messages;", echoed),
	} {
		if !strings.Contains(out, want) {
			t.Errorf("server output lacks %q:\n%s", want, out)
		}
	}
}

func TestPingpongUsage(t *testing.T) {
	for _, tt := range []struct {
		args   []string
		stderr string
	}{
		{[]string{"-D", "-1"}, "-D -1: the duration must be 0 to 3600 seconds"},
		{[]string{"-D", "NaN"}, "-D NaN: the duration must be 0 to 3600 seconds"},
		{[]string{"-D", "1", "-iters", "5"}, "-D and -iters exclude each other"},
		{[]string{"-in-process", "-s"}, "-in-process applies without -s and -c"},
		{[]string{"-spin", "-1us"}, "-spin -1µs: must not be negative"},
	} {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			code, _, stderr := runNd(t, append([]string{"pingpong"}, tt.args...)...)
			if code != 2 || !strings.Contains(stderr, tt.stderr) {
				t.Errorf("exit status %d, stderr:\n%s\nwant 2 and %q", code, stderr, tt.stderr)
			}
		})
	}
	code, stdout, _ := runNd(t, "help", "pingpong")
	for _, want := range []string{"-in-process", "-D seconds", "-spin duration", "the server runs in a child process"} {
		if code != 0 || !strings.Contains(stdout, want) {
			t.Errorf("nd help pingpong: exit status %d, lacks %q:\n%s", code, want, stdout)
		}
	}
}
