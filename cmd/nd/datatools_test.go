package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os/exec"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/godirect/nd"
	"github.com/godirect/nd/cmd/nd/internal/datapath"
	"github.com/godirect/nd/ndtest"
)

// TestDataToolsLocal runs every data test in one process, over the loop
// provider and over the tcp provider on loopback.
func TestDataToolsLocal(t *testing.T) {
	for _, tt := range []struct {
		name    string
		args    []string
		maxSize int
		iters   int
	}{
		{"ping", []string{"ping", "-max", "1K", "-iters", "30"}, 1 << 10, 30},
		// -q 2 grants a single credit; 300 bytes crosses the inline limit.
		{"ping-blocking", []string{"ping", "-b", "-n", "3", "-q", "2", "-max", "300", "-iters", "10"}, 256, 10},
		{"pingpong", []string{"pingpong", "-max", "1K", "-iters", "20"}, 1 << 10, 20},
		{"rdmaping-write", []string{"rdmaping", "-max", "64K", "-iters", "20"}, 64 << 10, 20},
		{"rdmaping-read", []string{"rdmaping", "-r", "-q", "4", "-n", "2", "-max", "8K", "-iters", "20"}, 8 << 10, 20},
		{"rdmaping-blocking", []string{"rdmaping", "-w", "-b", "-max", "1K", "-iters", "10"}, 1 << 10, 10},
		{"rdmapingpong", []string{"rdmapingpong", "-max", "1K", "-iters", "20"}, 1 << 10, 20},
		{"rdmapingpong-blocking", []string{"rdmapingpong", "-b", "-n", "2", "-max", "600", "-iters", "10"}, 512, 10},
	} {
		for _, provider := range []string{"loop", "tcp"} {
			// Not in parallel: the tests poll, and on a machine with few
			// CPUs spinning tests starve each other's transport. Over
			// tcp, fewer iterations keep the race detector's run short.
			t.Run(tt.name+"/"+provider, func(t *testing.T) {
				args := slices.Concat(tt.args, []string{"-provider", provider, "-timeout", "60s"})
				iters := tt.iters
				if provider == "tcp" {
					iters = min(iters, 5)
					args = append(args, "-iters", strconv.Itoa(iters))
				}
				code, stdout, stderr := runNd(t, args...)
				if code != 0 {
					t.Fatalf("nd %s: exit status %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), code, stdout, stderr)
				}
				if stderr != "" {
					t.Errorf("stderr is not empty:\n%s", stderr)
				}
				if tt.name == "pingpong" && provider == "tcp" {
					// Without -in-process the server is a child process.
					stdout = checkServerLine(t, stdout, "tcp", "ndpingpong's iteration counts")
				}
				checkTable(t, stdout, tt.maxSize, iters)
			})
		}
	}
}

// TestDataToolsCRC runs the tests over a tcp provider with MPA CRC, made
// by tcp.New for -crc.
func TestDataToolsCRC(t *testing.T) {
	for _, tool := range []string{"ping", "pingpong", "rdmaping", "rdmapingpong"} {
		t.Run(tool, func(t *testing.T) {
			code, stdout, stderr := runNd(t, tool, "-provider", "tcp", "-crc", "-max", "4K", "-iters", "3", "-timeout", "60s")
			if code != 0 {
				t.Fatalf("exit status %d\nstderr:\n%s", code, stderr)
			}
			if tool == "pingpong" {
				stdout = checkServerLine(t, stdout, "tcp", "ndpingpong's iteration counts")
			}
			checkTable(t, stdout, 4<<10, 3)
		})
	}
}

// TestDataToolsCongestion runs a test over a tcp provider whose congestion
// control -congestion names, and checks that one the kernel refuses fails
// the run with the setting named.
func TestDataToolsCongestion(t *testing.T) {
	code, stdout, stderr := runNd(t, "pingpong", "-provider", "tcp", "-congestion", "system", "-max", "4K", "-iters", "3", "-timeout", "60s")
	if code != 0 {
		t.Fatalf("-congestion system: exit status %d\nstderr:\n%s", code, stderr)
	}
	checkTable(t, checkServerLine(t, stdout, "tcp", "ndpingpong's iteration counts"), 4<<10, 3)
	if runtime.GOOS != "linux" {
		return
	}
	code, _, stderr = runNd(t, "pingpong", "-provider", "tcp", "-congestion", "no-such-algorithm", "-max", "4K", "-iters", "3", "-timeout", "60s")
	if code != 1 || !strings.Contains(stderr, `Config.CongestionControl "no-such-algorithm"`) || !strings.Contains(stderr, "ND_INVALID_PARAMETER") {
		t.Fatalf("-congestion no-such-algorithm: exit status %d\nstderr:\n%s", code, stderr)
	}
}

// listeningRE matches the server's first line and captures its port.
var listeningRE = regexp.MustCompile(`^Listening on 127\.0\.0\.1:(\d+) \(provider tcp\)$`)

// TestDataToolsServerClient runs each test as two invocations, "-s" and
// "-c 127.0.0.1:PORT", over the tcp provider. The server takes a free port
// (-p 0) and reports it.
func TestDataToolsServerClient(t *testing.T) {
	for _, tt := range []struct {
		tool   string
		args   []string
		served string // a line of the server's output
	}{
		{"pingpong", nil, fmt.Sprintf("%d messages of up to 256 bytes", 3+9*3)},
		{"ping", nil, fmt.Sprintf("%d messages of up to 256 bytes, 127 credits", 3+9*3+10)},
		{"rdmaping", []string{"-r"}, "RDMA Read of up to 256 bytes"},
		{"rdmapingpong", nil, fmt.Sprintf("%d round trips of up to 256 bytes", 3+9*3)},
	} {
		t.Run(tt.tool, func(t *testing.T) {
			serverOut := newSyncBuffer()
			var serverErr strings.Builder
			served := make(chan int, 1)
			go func() {
				served <- run([]string{tt.tool, "-provider", "tcp", "-s", "-p", "0", "-timeout", "60s"}, serverOut, &serverErr)
			}()
			var port string
			select {
			case <-serverOut.written:
				m := listeningRE.FindStringSubmatch(strings.TrimSpace(serverOut.String()))
				if m == nil {
					t.Fatalf("the server's first line is not Listening on 127.0.0.1:PORT:\n%s", serverOut.String())
				}
				port = m[1]
			case code := <-served:
				t.Fatalf("the server exited with %d before listening: %s", code, serverErr.String())
			}
			args := append([]string{tt.tool, "-provider", "tcp", "-c", "-max", "256", "-iters", "3", "-timeout", "60s"}, tt.args...)
			code, stdout, stderr := runNd(t, append(args, "127.0.0.1:"+port)...)
			if code != 0 {
				t.Errorf("client: exit status %d\nstderr:\n%s", code, stderr)
			} else {
				checkTable(t, stdout, 256, 3)
			}
			if code := <-served; code != 0 {
				t.Fatalf("server: exit status %d\nstderr:\n%s", code, serverErr.String())
			}
			if out := serverOut.String(); !strings.Contains(out, tt.served) || !strings.Contains(out, " disconnected\n") {
				t.Errorf("server output lacks %q or the disconnection:\n%s", tt.served, out)
			}
		})
	}
}

// TestPingpongProcesses builds nd and runs "nd pingpong -provider tcp -s"
// and "nd pingpong -provider tcp -c 127.0.0.1:PORT" as two processes.
func TestPingpongProcesses(t *testing.T) {
	bin := buildNd(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	// Under Wine, sockets are served by the wineserver process, which two
	// processes polling without pause starve on a small machine (round
	// trips of tens of milliseconds): there both sides block (-b).
	var block []string
	if ndtest.UnderWine() {
		block = []string{"-b"}
	}
	server := exec.CommandContext(ctx, bin, append([]string{"pingpong", "-provider", "tcp", "-s", "-p", "0", "-timeout", "50s"}, block...)...)
	var serverErr strings.Builder
	server.Stderr = &serverErr
	pipe, err := server.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := server.Start(); err != nil {
		t.Fatal(err)
	}
	lines := bufio.NewScanner(pipe)
	if !lines.Scan() {
		server.Wait()
		t.Fatalf("the server printed nothing; stderr:\n%s", serverErr.String())
	}
	m := listeningRE.FindStringSubmatch(lines.Text())
	if m == nil {
		server.Process.Kill()
		server.Wait()
		t.Fatalf("the server's first line is %q", lines.Text())
	}
	rest := make(chan string, 1)
	go func() {
		b, _ := io.ReadAll(pipe)
		rest <- string(b)
	}()

	client := exec.CommandContext(ctx, bin, append(append([]string{"pingpong", "-provider", "tcp", "-c", "-max", "1K", "-iters", "5",
		"-timeout", "50s"}, block...), "127.0.0.1:"+m[1])...)
	out, err := client.Output()
	if err != nil {
		t.Errorf("client: %v\nstdout:\n%s", err, out)
	} else {
		checkTable(t, string(out), 1<<10, 5)
	}
	serverOut := <-rest
	if err := server.Wait(); err != nil {
		t.Fatalf("server: %v\nstdout:\n%s\nstderr:\n%s", err, serverOut, serverErr.String())
	}
	if !strings.Contains(serverOut, "Echoed 60 messages;") {
		t.Errorf("the server's output lacks the echo count:\n%s", serverOut)
	}
}

func TestDataToolsUsage(t *testing.T) {
	for _, tt := range []struct {
		args   []string
		stderr string
	}{
		{[]string{"rdmaping", "-r", "-w"}, "-r and -w exclude each other"},
		{[]string{"rdmaping", "-s", "-r"}, "-r and -w are client flags"},
		{[]string{"ping", "-provider", "loop", "-crc"}, "-crc applies to -provider tcp only, not loop"},
		{[]string{"ping", "-provider", "shm", "-congestion", "reno"}, "-congestion applies to -provider tcp only, not shm"},
		{[]string{"rdmapingpong", "-q", "4"}, "flag provided but not defined: -q"},
		{[]string{"ping", "-q", "0"}, "-q 0: the queue depth must be at least 1"},
		{[]string{"rdmaping", "-c"}, "-c needs the server's ADDRESS[:PORT]"},
	} {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			code, _, stderr := runNd(t, tt.args...)
			if code != 2 || !strings.Contains(stderr, tt.stderr) {
				t.Errorf("exit status %d, stderr:\n%s\nwant 2 and %q", code, stderr, tt.stderr)
			}
		})
	}
	for _, tool := range []string{"ping", "rdmaping", "rdmapingpong"} {
		code, stdout, _ := runNd(t, "help", tool)
		if code != 0 || !strings.Contains(stdout, "Usage: nd "+tool+" ") || !strings.Contains(stdout, "-crc") {
			t.Errorf("nd help %s: exit status %d, output:\n%s", tool, code, stdout)
		}
	}
}

// TestDataToolsErrors checks failures that reach the network.
func TestDataToolsErrors(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want []string
	}{
		{[]string{"ping", "-c", "127.0.0.1:54998"}, []string{"nd ping: connecting to 127.0.0.1:54998", "ND_CONNECTION_REFUSED"}},
		{[]string{"rdmaping", "-s", "-timeout", "50ms"}, []string{"GetConnectionRequest on port 54326", "ND_CANCELED"}},
		{[]string{"rdmapingpong", "-s", "-timeout", "50ms"}, []string{"GetConnectionRequest on port 54327", "ND_CANCELED"}},
		{[]string{"ping", "-n", "33"}, []string{"-n 33: the adapter allows 32"}},
		{[]string{"rdmaping", "-q", "100000"}, []string{"-q 100000: the adapter allows"}},
	} {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			// The loop provider: these check the tools' error reports, and
			// fixed ports must not meet real sockets of the host.
			args := slices.Concat(tt.args[:1], []string{"-provider", "loop", "-max", "16", "-iters", "1"}, tt.args[1:])
			code, _, stderr := runNd(t, args...)
			if code != 1 {
				t.Errorf("exit status %d, want 1; stderr:\n%s", code, stderr)
			}
			for _, w := range tt.want {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr lacks %q:\n%s", w, stderr)
				}
			}
		})
	}
	if err := datapath.CheckWindow(nd.AdapterInfo{MaxOutboundLength: 1 << 20, MaxRegistrationSize: 1 << 20, MaxWindowSize: 1 << 20}, 16); err != datapath.ErrNoInOrderDMA {
		t.Errorf("an adapter without AdapterInOrderDMA: %v, want %v", err, datapath.ErrNoInOrderDMA)
	}
}

// TestDataToolsAllocations checks that the timed loops of the new tests
// allocate nothing: ten times more iterations must not cost more
// allocations.
func TestDataToolsAllocations(t *testing.T) {
	if testing.Short() || datapath.RaceBuild {
		t.Skip("short, or the race detector, which allocates on its own")
	}
	for _, tool := range []string{"ping", "rdmaping", "rdmapingpong"} {
		t.Run(tool, func(t *testing.T) {
			checkLoopAllocs(t, 20, 200, func(iters int) {
				if code, _, stderr := runNd(t, tool, "-max", "512", "-iters", strconv.Itoa(iters)); code != 0 {
					t.Fatalf("exit status %d: %s", code, stderr)
				}
			})
		})
	}
}

// checkLoopAllocs fails t if running a tool with many iterations costs
// materially more allocations than with few: its timed loop allocates.
func checkLoopAllocs(t *testing.T, few, many int, run func(iters int)) {
	t.Helper()
	allocs := func(iters int) uint64 {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		run(iters)
		runtime.ReadMemStats(&after)
		return after.Mallocs - before.Mallocs
	}
	allocs(10) // warm up
	a, b := allocs(few), allocs(many)
	t.Logf("allocations: %d for %d iterations, %d for %d", a, few, b, many)
	if extra := int64(b) - int64(a); extra > 100 {
		t.Errorf("%d allocations for %d iterations, %d for %d: the loop allocates", a, few, b, many)
	}
}
