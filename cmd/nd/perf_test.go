package main

import (
	"bufio"
	"context"
	"encoding/json"
	"image"
	_ "image/png" // image.DecodeConfig of the plots
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/godirect/nd/cmd/nd/internal/datapath"
	"github.com/godirect/nd/cmd/nd/internal/perftest"
	"github.com/godirect/nd/cmd/nd/internal/session"
)

// TestMain lets the test binary stand in for nd when nd starts its
// server process (which it does by running its own executable).
func TestMain(m *testing.M) {
	if os.Getenv(session.ServerChildEnv) != "" {
		os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

// perfTable is nd perf's table: the column line and the rows' fields.
type perfTable struct {
	header string
	rows   [][]float64
}

// parsePerfTable finds the column line in out and parses the rows after
// it, up to the closing rule.
func parsePerfTable(t *testing.T, out string) perfTable {
	t.Helper()
	var tab perfTable
	lines := strings.Split(out, "\n")
	i := slices.IndexFunc(lines, func(l string) bool { return strings.HasPrefix(l, " #bytes") })
	if i < 0 {
		t.Fatalf("no column line in:\n%s", out)
	}
	tab.header = lines[i]
	for _, l := range lines[i+1:] {
		if l == perftest.Line {
			return tab
		}
		var row []float64
		for _, f := range strings.Fields(l) {
			v, err := strconv.ParseFloat(f, 64)
			if err != nil {
				t.Fatalf("row %q: %v", l, err)
			}
			row = append(row, v)
		}
		tab.rows = append(tab.rows, row)
	}
	t.Fatalf("no closing rule after the rows in:\n%s", out)
	return tab
}

// The column lines of the two kinds of test.
const (
	perfBWHeader  = " #bytes     #iterations    BW peak[MB/sec]    BW average[MB/sec]   MsgRate[Mpps]"
	perfLatHeader = " #bytes  #iterations  t_min[usec]    t_max[usec]    t_typical[usec]  t_avg[usec]    t_stdev[usec]    99% percentile[usec]   99.9% percentile[usec]"
)

// checkPerfTable checks the table of test in out: its columns, a row per
// size, and numbers that make sense.
func checkPerfTable(t *testing.T, test string, out string, sizes []int, iters int) {
	t.Helper()
	tab := parsePerfTable(t, out)
	lat := strings.HasSuffix(test, "_lat")
	want, fields := perfBWHeader, 5
	if lat {
		want, fields = perfLatHeader, 9
	}
	if tab.header != want {
		t.Errorf("column line\n%q, want\n%q", tab.header, want)
	}
	if len(tab.rows) != len(sizes) {
		t.Fatalf("%d rows, want %d:\n%s", len(tab.rows), len(sizes), out)
	}
	for i, row := range tab.rows {
		if len(row) != fields || int(row[0]) != sizes[i] || iters > 0 && int(row[1]) != iters {
			t.Errorf("row %v: want %d fields, %d bytes, %d iterations", row, fields, sizes[i], iters)
			continue
		}
		if lat {
			tmin, tmax, typical, avg := row[2], row[3], row[4], row[5]
			if !(tmin > 0 && tmin <= typical && typical <= tmax && tmin <= avg && avg <= tmax && row[6] >= 0 &&
				typical <= row[7] && row[7] <= row[8] && row[8] <= tmax) {
				t.Errorf("row %v: want 0 < t_min <= t_typical, t_avg <= t_max and t_typical <= 99%% <= 99.9%% <= t_max", row)
			}
		} else if !(row[2] > 0 && row[3] > 0 && row[2] >= row[3]*0.999 && row[4] > 0) {
			t.Errorf("row %v: want bandwidths > 0, peak >= average, a message rate > 0", row)
		}
	}
}

// runPerf runs nd perf with args and fails t unless it succeeds quietly.
func runPerf(t *testing.T, args ...string) string {
	t.Helper()
	args = append([]string{"perf"}, append(args, "-timeout", "60s")...)
	code, stdout, stderr := runNd(t, args...)
	if code != 0 || stderr != "" {
		t.Fatalf("nd %s: exit status %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), code, stdout, stderr)
	}
	return stdout
}

// TestPerfTests runs every test over every provider with both sides in
// this process and two connections; over shm with the windows in
// shm.AllocateMemory's memory (the default) and in Go heap memory (-heap).
func TestPerfTests(t *testing.T) {
	for _, test := range perftest.Tests {
		for _, provider := range []string{"loop", "tcp", "shm", "shm -heap"} {
			t.Run(test.Name+"/"+strings.ReplaceAll(provider, " ", ""), func(t *testing.T) {
				skipUnsupported(t, provider)
				args := append([]string{test.Name, "--provider"}, strings.Fields(provider)...)
				args = append(args, "--in-process", "-s", "300", "-n", "40", "-q", "2")
				if !test.Lat {
					args = append(args, "-t", "8")
				}
				// The rows count both connections'.
				checkPerfTable(t, test.Name, runPerf(t, args...), []int{300}, 80)
			})
		}
	}
}

// TestPerfSRQ runs the send tests with --use_srq (each side's Receives on
// a shared receive queue) over every provider, several connections for
// send_bw, and checks that --json reports it.
func TestPerfSRQ(t *testing.T) {
	for _, provider := range []string{"loop", "tcp", "shm"} {
		t.Run(provider, func(t *testing.T) {
			skipUnsupported(t, provider)
			out := runPerf(t, "send_bw", "--provider", provider, "--in-process", "--use_srq", "-s", "300", "-n", "40", "-q", "2", "-t", "8")
			checkPerfTable(t, "send_bw", out, []int{300}, 80)
			out = runPerf(t, "send_lat", "--provider", provider, "--in-process", "--use_srq", "-s", "64", "-n", "40", "-Q", "3")
			checkPerfTable(t, "send_lat", out, []int{64}, 40)
			out = runPerf(t, "send_lat", "--provider", provider, "--in-process", "--use_srq", "-s", "8", "-n", "20", "--json")
			if !strings.Contains(out, `"use_srq": true`) {
				t.Errorf("--json does not report use_srq:\n%s", out)
			}
		})
	}
}

// TestPerfCQMod runs send_lat with every Send's completion asked for (-Q
// 1) and with every 7th's (-Q 7: silent Sends between signaled ones, and a
// step that ends with silent Sends), over every provider.
func TestPerfCQMod(t *testing.T) {
	for _, provider := range []string{"loop", "tcp", "shm"} {
		for _, q := range []string{"1", "7"} {
			t.Run(provider+"/Q"+q, func(t *testing.T) {
				skipUnsupported(t, provider)
				out := runPerf(t, "send_lat", "--provider", provider, "--in-process", "-s", "64", "-n", "40", "-Q", q)
				checkPerfTable(t, "send_lat", out, []int{64}, 40)
			})
		}
	}
}

// TestPerfSweep runs -a with --json and --plot, and the defaults' sizes.
func TestPerfSweep(t *testing.T) {
	var all []int
	for s := 2; s <= 1<<23; s *= 2 {
		all = append(all, s)
	}
	dir := tempDir(t)
	for _, tt := range []struct {
		test string
		args []string
		unit string
	}{
		{"write_bw", []string{"-a", "-n", "3", "--report_gbits"}, "Gb/sec"},
		{"send_lat", []string{"-a", "-n", "3", "-b"}, "usec"},
	} {
		t.Run(tt.test, func(t *testing.T) {
			png := filepath.Join(dir, tt.test+".png")
			out := runPerf(t, append([]string{tt.test, "--provider", "loop", "--json", "--plot", png}, tt.args...)...)
			var doc struct {
				Test       string            `json:"test"`
				Provider   string            `json:"provider"`
				Parameters perftest.Params   `json:"parameters"`
				Units      map[string]string `json:"units"`
				Results    []map[string]float64
			}
			if err := json.Unmarshal([]byte(out), &doc); err != nil {
				t.Fatalf("--json: %v:\n%s", err, out)
			}
			if doc.Test != tt.test || doc.Provider != "loop" || !doc.Parameters.All || !slices.Equal(doc.Parameters.Sizes, all) ||
				len(doc.Results) != len(all) || !slices.Contains(mapValues(doc.Units), tt.unit) {
				t.Errorf("--json: test %q, provider %q, parameters %+v, units %v, %d rows; want %d rows in %s",
					doc.Test, doc.Provider, doc.Parameters, doc.Units, len(doc.Results), len(all), tt.unit)
			}
			cpu := 0.0
			for i, row := range doc.Results {
				if int(row["bytes"]) != all[i] || row["iterations"] != 3 || row["bw_average"] <= 0 && row["t_typical_usec"] <= 0 {
					t.Errorf("--json row %d: %v", i, row)
				}
				c, ok := row["client_cpu_usec_per_op"]
				if !ok || c < 0 {
					t.Errorf("--json row %d has no client_cpu_usec_per_op: %v", i, row)
				}
				cpu += c
			}
			// On Windows the process's CPU time (GetProcessTimes) moves in
			// clock ticks, 15.6 ms by default (10 ms under Wine), which
			// three iterations of every size over loop may not reach
			// together: there the column may read zero throughout.
			if cpu <= 0 && runtime.GOOS != "windows" {
				t.Errorf("--json: no CPU time over the %d sizes", len(all))
			}
			f, err := os.Open(png)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			cfg, format, err := image.DecodeConfig(f)
			if err != nil || format != "png" || cfg.Width < 300 || cfg.Height < 200 {
				t.Errorf("--plot: %s %dx%d, %v", format, cfg.Width, cfg.Height, err)
			}
		})
	}
	// The defaults: 65536 bytes for bw, 2 for lat; -n caps the iterations.
	checkPerfTable(t, "read_bw", runPerf(t, "read_bw", "--provider", "loop", "-n", "10"), []int{65536}, 10)
	checkPerfTable(t, "read_lat", runPerf(t, "read_lat", "--provider", "loop", "--iters", "10"), []int{2}, 10)
}

// mapValues returns the values of m.
func mapValues(m map[string]string) []string {
	var v []string
	for _, s := range m {
		v = append(v, s)
	}
	return v
}

// TestPerfDuration runs a test by time.
func TestPerfDuration(t *testing.T) {
	start := time.Now()
	out := runPerf(t, "send_bw", "--provider", "loop", "-D", "1", "-s", "4K", "-t", "16")
	if d := time.Since(start); d < time.Second {
		t.Errorf("-D 1 took %v", d)
	}
	checkPerfTable(t, "send_bw", out, []int{4096}, 0)
	if !strings.Contains(out, "Duration        : 1 sec per size") {
		t.Errorf("the header does not tell the duration:\n%s", out)
	}
}

// TestPerfTwoProcesses runs nd perf without an address, which starts the
// server as a second process (here the test binary, see TestMain).
func TestPerfTwoProcesses(t *testing.T) {
	for _, tt := range []struct{ test, provider string }{{"send_bw", "tcp"}, {"write_lat", "shm"}} {
		t.Run(tt.test+"/"+tt.provider, func(t *testing.T) {
			skipUnsupported(t, tt.provider)
			out := runPerf(t, tt.test, "--provider", tt.provider, "-b", "-n", "30", "-s", "1K")
			checkPerfTable(t, tt.test, out, []int{1024}, 30)
		})
	}
}

// TestPerfBinary builds nd and runs "nd perf --server" and the client as
// two processes, and nd perf without an address over shm.
func TestPerfBinary(t *testing.T) {
	bin := buildNd(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	server := exec.CommandContext(ctx, bin, "perf", "read_lat", "--server", "-p", "0", "-b", "--provider", "tcp", "-timeout", "50s")
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
	var m []string
	if lines.Scan() {
		m = session.ListeningLineRE.FindStringSubmatch(lines.Text())
	}
	if m == nil {
		server.Process.Kill()
		server.Wait()
		t.Fatalf("the server's first line is %q; stderr:\n%s", lines.Text(), serverErr.String())
	}
	var served []string
	scanned := make(chan struct{})
	go func() {
		defer close(scanned)
		for lines.Scan() {
			served = append(served, lines.Text())
		}
	}()
	out, err := exec.CommandContext(ctx, bin, "perf", "read_lat", "-n", "50", "--provider", "tcp", "-timeout", "50s", m[1]).Output()
	if err != nil {
		t.Errorf("client: %v\nstdout:\n%s", err, out)
	} else {
		checkPerfTable(t, "read_lat", string(out), []int{2}, 50)
	}
	<-scanned
	if err := server.Wait(); err != nil {
		t.Fatalf("server: %v\nstderr:\n%s", err, serverErr.String())
	}
	if len(served) != 2 || !strings.Contains(served[0], "read_lat, 1 connection(s)") || !strings.Contains(served[1], "Served 1 connection(s)") {
		t.Errorf("the server's output: %q", served)
	}

	// No address: nd perf starts its server process itself (over tcp
	// where shm is not implemented).
	provider := "shm"
	if !shmSupported() {
		provider = "tcp"
	}
	out, err = exec.CommandContext(ctx, bin, "perf", "send_bw", "--provider", provider, "-b", "-n", "100", "-s", "8K", "-q", "2").Output()
	if err != nil {
		t.Fatalf("nd perf send_bw --provider %s: %v\nstdout:\n%s", provider, err, out)
	}
	checkPerfTable(t, "send_bw", string(out), []int{8192}, 200)
	if strings.Contains(string(out), "\r") {
		t.Errorf("a progress line on a pipe:\n%q", out)
	}
}

// buildNd builds nd with the test's go command into a temporary
// directory and returns its path, or returns $GODIRECT_ND_BINARY, an nd
// built beforehand (where the tests run without a go command, as under
// Wine); it skips t when neither is possible.
func buildNd(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds the binary")
	}
	if bin := os.Getenv("GODIRECT_ND_BINARY"); bin != "" {
		return bin
	}
	// go test puts its own toolchain's bin directory first in the test's PATH.
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("no go command to build nd with: %v", err)
	}
	bin := filepath.Join(tempDir(t), "nd")
	if out, err := exec.Command(goTool, "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Skipf("cannot build nd: %v\n%s", err, out)
	}
	return bin
}

func TestPerfUsage(t *testing.T) {
	for _, tt := range []struct {
		args   []string
		stderr string
	}{
		{[]string{"perf"}, "name the test"},
		{[]string{"perf", "atomic_bw"}, `unknown test "atomic_bw"`},
		{[]string{"perf", "send_bw", "--bogus"}, "flag provided but not defined: -bogus"},
		{[]string{"perf", "read_lat", "-R", "-q", "3"}, "-q 3: the latency tests measure one connection (with -R, as perftest)"},
		{[]string{"perf", "send_bw", "--server", "127.0.0.1"}, "--server takes no address"},
		{[]string{"perf", "send_bw", "--in-process", "127.0.0.1"}, "--in-process runs both sides"},
		{[]string{"perf", "send_bw", "-s", "0"}, "-s 0: the size must be"},
		{[]string{"perf", "write_bw", "-n", "0"}, "-n 0: at least 1 iteration"},
		{[]string{"perf", "send_lat", "-w", "-2"}, "-w -2: the warm-up takes 0 iterations or more"},
		{[]string{"perf", "read_bw", "-t", "0"}, "-t 0: the tx depth"},
		{[]string{"perf", "send_lat", "-Q", "0"}, "-Q 0: every 1st to"},
		{[]string{"perf", "read_bw", "1.2.3.4", "5.6.7.8"}, "too many arguments"},
		{[]string{"perf", "read_bw", "-p", "1", "127.0.0.1:2"}, "disagree"},
		{[]string{"perf", "send_bw", "--server", "--json"}, "--json and --plot are client flags"},
		{[]string{"perf", "write_bw", "--use_srq"}, "--use_srq applies to the send tests"},
		{[]string{"perf", "send_bw", "--use_srq", "-R"}, "--use_srq applies without -R"},
	} {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			code, _, stderr := runNd(t, tt.args...)
			if code != 2 || !strings.Contains(stderr, tt.stderr) {
				t.Errorf("exit status %d, stderr:\n%s\nwant 2 and %q", code, stderr, tt.stderr)
			}
		})
	}
	for _, args := range [][]string{{"help", "perf"}, {"perf", "send_bw", "-h"}, {"perf", "-h"}} {
		code, stdout, _ := runNd(t, args...)
		for _, want := range []string{"Usage: nd perf TEST", "-size bytes", "-tx-depth depth", "-report_gbits", "--server", "99.9%", "-q N makes N connections", "over the connections in turn"} {
			if code != 0 || !strings.Contains(stdout, want) {
				t.Errorf("nd %s: exit status %d, output lacks %q:\n%s", strings.Join(args, " "), code, want, stdout)
			}
		}
	}
}

// TestPerfErrors checks failures that reach the network.
func TestPerfErrors(t *testing.T) {
	code, _, stderr := runNd(t, "perf", "send_bw", "--provider", "tcp", "-n", "1", "127.0.0.1:1")
	if code != 1 || !strings.Contains(stderr, "connecting to 127.0.0.1:1") || !strings.Contains(stderr, "ND_CONNECTION_REFUSED") {
		t.Errorf("exit status %d, stderr:\n%s", code, stderr)
	}
	code, _, stderr = runNd(t, "perf", "send_bw", "--server", "-p", "0", "--provider", "tcp", "-timeout", "50ms")
	if code != 1 || !strings.Contains(stderr, "GetConnectionRequest") || !strings.Contains(stderr, "ND_CANCELED") {
		t.Errorf("a server nobody connects to: exit status %d, stderr:\n%s", code, stderr)
	}
}

// TestPerfAllocations checks that the timed loops allocate nothing: ten
// times more iterations must not cost more allocations, with one
// connection and with three on the one completion queue of each side.
func TestPerfAllocations(t *testing.T) {
	if testing.Short() || datapath.RaceBuild {
		t.Skip("short, or the race detector, which allocates on its own")
	}
	for _, test := range perftest.Tests {
		for _, qps := range []string{"1", "3"} {
			t.Run(test.Name+"/q"+qps, func(t *testing.T) {
				checkLoopAllocs(t, 100, 1000, func(iters int) {
					runPerf(t, test.Name, "--provider", "loop", "-s", "512", "-q", qps, "-n", strconv.Itoa(iters))
				})
			})
		}
	}
}
