package main

import (
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/godirect/nd/cmd/nd/internal/datapath"
)

const columnLine = "      Size      Iter   Latency     CPU   Bytes/Sec"

// checkTable checks that out is the pingpong table for sizes 1..maxSize with
// iters iterations each (any positive number if iters is 0), and returns
// the iteration counts.
func checkTable(t *testing.T, out string, maxSize, iters int) []int {
	t.Helper()
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	header := fmt.Sprintf("Using %d processors. Sender Frequency is 1000000000", runtime.NumCPU())
	if len(lines) < 3 || lines[0] != header || lines[1] != "" || lines[2] != columnLine {
		t.Fatalf("the table does not start with the header, a blank line and the columns:\n%s", out)
	}
	rows := lines[3:]
	var sizes []int
	for s := 1; s <= maxSize; s *= 2 {
		sizes = append(sizes, s)
	}
	if len(rows) != len(sizes) {
		t.Fatalf("%d rows, want %d:\n%s", len(rows), len(sizes), out)
	}
	var counts []int
	for i, row := range rows {
		f := strings.Fields(row)
		if len(f) != 5 {
			t.Errorf("row %q does not have the five columns", row)
			continue
		}
		n, err := strconv.Atoi(f[1])
		if f[0] != strconv.Itoa(sizes[i]) || err != nil || n < 1 || iters > 0 && n != iters {
			t.Errorf("row %d is %q, want size %d and %d iterations (0: any)", i, row, sizes[i], iters)
		}
		counts = append(counts, n)
		if want := fmt.Sprintf(" %9s %9s", f[0], f[1]); !strings.HasPrefix(row, want) {
			t.Errorf("row %q is not laid out as %q", row, want)
		}
		for _, num := range f[2:] {
			if v, err := strconv.ParseFloat(num, 64); err != nil || v < 0 {
				t.Errorf("row %q: %q is not a non-negative number", row, num)
			}
		}
	}
	return counts
}

// TestPingpongLocal runs both sides in this process (-in-process).
func TestPingpongLocal(t *testing.T) {
	for _, tt := range []struct {
		name    string
		args    []string
		maxSize int
		iters   int
	}{
		{"polling", []string{"-max", "1K", "-iters", "50"}, 1024, 50},
		// 300 bytes crosses the loop adapter's 256 inline bytes.
		{"blocking", []string{"-b", "-max", "300", "-iters", "20"}, 256, 20},
		{"sges", []string{"-n", "3", "-q", "2", "-max", "64K", "-iters", "10"}, 64 << 10, 10},
		{"port", []string{"-p", "7777", "-max", "8", "-iters", "5"}, 8, 5},
		// A spin of 1 ns blocks in Notify for nearly every completion.
		{"spin", []string{"-spin", "1ns", "-max", "4K", "-iters", "20"}, 4096, 20},
		{"poll only", []string{"-spin", "0", "-max", "64", "-iters", "20"}, 64, 20},
	} {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := runNd(t, append([]string{"pingpong", "-in-process"}, tt.args...)...)
			if code != 0 {
				t.Fatalf("exit status %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
			}
			if stderr != "" {
				t.Errorf("stderr is not empty:\n%s", stderr)
			}
			checkTable(t, stdout, tt.maxSize, tt.iters)
		})
	}
}

// TestPingpongServerClient runs "nd pingpong -s" and "nd pingpong -c" as two
// invocations in this process (the loop provider reaches no further).
func TestPingpongServerClient(t *testing.T) {
	serverOut := newSyncBuffer()
	var serverErr strings.Builder
	served := make(chan int, 1)
	go func() {
		served <- run([]string{"pingpong", "-provider", "loop", "-s", "-p", "54999", "-timeout", "20s", "127.0.0.1"}, serverOut, &serverErr)
	}()
	select {
	case <-serverOut.written: // "Listening on ..."
	case code := <-served:
		t.Fatalf("the server exited with %d before listening: %s", code, serverErr.String())
	}
	code, stdout, stderr := runNd(t, "pingpong", "-provider", "loop", "-c", "-max", "128", "-iters", "7", "127.0.0.1:54999")
	if code != 0 {
		t.Fatalf("client: exit status %d\nstderr:\n%s", code, stderr)
	}
	checkTable(t, stdout, 128, 7)
	select {
	case code := <-served:
		if code != 0 {
			t.Fatalf("server: exit status %d\nstderr:\n%s", code, serverErr.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the server did not exit after the client disconnected")
	}
	out := serverOut.String()
	for _, want := range []string{
		"Listening on 127.0.0.1:54999 (provider loop)\n",
		"Accepted a connection from 127.0.0.2:",
		fmt.Sprintf("%d messages of up to 128 bytes", 7+8*7),
		"Echoed 63 messages;",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("server output lacks %q:\n%s", want, out)
		}
	}
}

func TestPingpongErrors(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want []string
	}{
		{[]string{"-c", "127.0.0.1:54998"}, []string{"connecting to 127.0.0.1:54998", "ND_CONNECTION_REFUSED"}},
		{[]string{"-provider", "nosuch"}, []string{"OpenProvider nosuch", "ND_NOT_SUPPORTED"}},
		{[]string{"-n", "33"}, []string{"-n 33: the adapter allows 32"}},
		{[]string{"-q", "100000"}, []string{"-q 100000: the adapter allows"}},
		{[]string{"-s", "-timeout", "50ms"}, []string{"GetConnectionRequest on port 54325", "ND_CANCELED", "context deadline exceeded"}},
	} {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			// The loop provider (a later -provider wins): fixed ports must
			// not meet real sockets of the host.
			code, _, stderr := runNd(t, append([]string{"pingpong", "-provider", "loop", "-max", "16", "-iters", "1"}, tt.args...)...)
			if code != 1 {
				t.Errorf("exit status %d, want 1; stderr:\n%s", code, stderr)
			}
			if !strings.HasPrefix(stderr, "nd pingpong: ") {
				t.Errorf("stderr does not start with the command's name:\n%s", stderr)
			}
			for _, w := range tt.want {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr lacks %q:\n%s", w, stderr)
				}
			}
		})
	}
}

// TestPingpongAllocations checks that the timed loop allocates nothing:
// 50 times more iterations must not cost more allocations.
func TestPingpongAllocations(t *testing.T) {
	if testing.Short() || datapath.RaceBuild {
		// Under the race detector, which allocates on its own, a side
		// that blocks in Notify (-spin) showed allocations per wait.
		t.Skip("short, or the race detector, which allocates on its own")
	}
	// 10 sizes and a warm-up: (200-20)*11 more round trips.
	checkLoopAllocs(t, 20, 200, func(iters int) {
		if code, _, stderr := runNd(t, "pingpong", "-in-process", "-max", "512", "-iters", strconv.Itoa(iters)); code != 0 {
			t.Fatalf("exit status %d: %s", code, stderr)
		}
	})
	// Blocking in Notify for nearly every completion (-spin 1ns).
	checkLoopAllocs(t, 20, 200, func(iters int) {
		if code, _, stderr := runNd(t, "pingpong", "-in-process", "-spin", "1ns", "-max", "512", "-iters", strconv.Itoa(iters)); code != 0 {
			t.Fatalf("exit status %d: %s", code, stderr)
		}
	})
	// Timed: 10 and 100 milliseconds per size.
	checkLoopAllocs(t, 10, 100, func(ms int) {
		d := strconv.FormatFloat(float64(ms)/1000, 'f', -1, 64)
		if code, _, stderr := runNd(t, "pingpong", "-in-process", "-max", "512", "-D", d); code != 0 {
			t.Fatalf("exit status %d: %s", code, stderr)
		}
	})
}
