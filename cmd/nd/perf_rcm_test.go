package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/godirect/nd/cmd/nd/internal/perftest"
	"github.com/godirect/nd/cmd/nd/internal/session"
)

// rcmCase is one run of nd perf -R's client against nd perf -R --server.
type rcmCase struct {
	test  string
	args  []string // given to both sides
	sizes []int    // the rows each side prints
	iters int      // in each row (0: by time, at least one)
	crc   bool
}

// TestPerfRCMLoopback runs nd perf -R's client against nd perf -R --server
// over tcp loopback, both sides speaking perftest 6.06's rdma_cm protocol,
// for every test, with several connections, all sizes, by time, and a tx
// depth and outstanding Reads, and checks the rows both sides print.
func TestPerfRCMLoopback(t *testing.T) {
	small := []int{2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384, 32768, 65536,
		1 << 17, 1 << 18, 1 << 19, 1 << 20, 1 << 21, 1 << 22, 1 << 23}
	for _, tc := range []rcmCase{
		{"send_bw", []string{"-n", "300", "-s", "4096"}, []int{4096}, 300, false},
		{"send_bw", []string{"-n", "1100", "-s", "100"}, []int{100}, 1100, false}, // rx_depth 512: Receives reposted, credits wrap
		{"send_bw", []string{"-n", "2", "-s", "64"}, []int{64}, 2, false},         // rx_depth 2: a credit per Receive
		{"send_bw", []string{"-n", "5", "-s", "64"}, []int{64}, 5, false},         // rx_depth 6 (made even)
		{"send_bw", []string{"-n", "40", "-s", "1000", "-q", "3", "-t", "4"}, []int{1000}, 120, false},
		{"send_bw", []string{"-n", "20", "-a"}, small, 20, false},
		{"send_bw", []string{"-D", "1", "-s", "512"}, []int{512}, 0, false},
		{"write_bw", []string{"-n", "50", "-s", "65536"}, []int{65536}, 50, false},
		{"write_bw", []string{"-n", "200", "-s", "1000"}, []int{1000}, 200, true},
		{"write_bw", []string{"-n", "30", "-s", "4096", "-q", "4"}, []int{4096}, 120, false},
		{"write_bw", []string{"-n", "10", "-a", "-t", "3"}, small, 10, false},
		{"read_bw", []string{"-n", "50", "-s", "65536"}, []int{65536}, 50, false},
		{"read_bw", []string{"-n", "200", "-s", "3000", "-o", "2"}, []int{3000}, 200, true},
		{"read_bw", []string{"-D", "1", "-s", "8192", "-q", "2"}, []int{8192}, 0, false},
		{"send_lat", []string{"-n", "200", "-s", "64"}, []int{64}, 200, false},
		{"send_lat", []string{"-n", "100", "-s", "4000", "-t", "8", "-Q", "4"}, []int{4000}, 100, true},
		{"send_lat", []string{"-n", "5", "-a"}, small, 5, false},
		{"send_lat", []string{"-D", "1", "-s", "8"}, []int{8}, 0, false},
		{"write_lat", []string{"-n", "300", "-s", "2"}, []int{2}, 300, false}, // the counting byte wraps
		{"write_lat", []string{"-n", "5", "-a"}, small, 5, false},
		{"write_lat", []string{"-n", "50", "-s", "4096"}, []int{4096}, 50, true},
		{"write_lat", []string{"-D", "1", "-s", "64"}, []int{64}, 0, false},
		{"read_lat", []string{"-n", "100", "-s", "64"}, []int{64}, 100, false},
		{"read_lat", []string{"-n", "5", "-a", "-o", "1"}, small, 5, false},
		{"read_lat", []string{"-D", "1", "-s", "1024", "-o", "2"}, []int{1024}, 0, false},
	} {
		name := strings.Join(append([]string{tc.test}, tc.args...), "_")
		if tc.crc {
			name += "_crc"
		}
		t.Run(name, func(t *testing.T) { runRCMCase(t, tc) })
	}
}

// runRCMCase runs tc and checks both sides' rows.
func runRCMCase(t *testing.T, tc rcmCase) {
	common := append([]string{"-R", "-timeout", "120s"}, tc.args...)
	if tc.crc {
		common = append(common, "-crc")
	}
	srvOut := newSyncBuffer()
	var srvErr bytes.Buffer
	srvDone := make(chan int, 1)
	go func() {
		srvDone <- run(append([]string{"perf", tc.test, "--server", "-p", "0"}, common...), srvOut, &srvErr)
	}()
	var addr string
	select {
	case <-srvOut.written:
		m := session.ListeningLineRE.FindStringSubmatch(srvOut.String())
		if m == nil {
			t.Fatalf("the server's first output is %q", srvOut.String())
		}
		addr = m[1]
	case code := <-srvDone:
		t.Fatalf("the server exited %d before listening: %s", code, srvErr.String())
	case <-time.After(30 * time.Second):
		t.Fatal("the server did not listen")
	}
	code, out, errOut := runNd(t, append([]string{"perf", tc.test}, append(common, addr)...)...)
	if code != 0 {
		t.Fatalf("client exit %d: %s\n%s", code, errOut, out)
	}
	if code := <-srvDone; code != 0 {
		t.Fatalf("server exit %d: %s\n%s", code, srvErr.String(), srvOut.String())
	}
	lat := strings.HasSuffix(tc.test, "_lat")
	for side, o := range map[string]string{"client": out, "server": srvOut.String()} {
		if side == "server" && tc.test == "read_lat" {
			continue // only the client Reads and reports
		}
		i := strings.Index(o, perftest.Line)
		if i < 0 {
			t.Fatalf("%s: no table in the output:\n%s", side, o)
		}
		tab := parsePerfTable(t, o[i:])
		sizes := tc.sizes
		if side == "server" && (tc.test == "write_bw" || tc.test == "read_bw") {
			sizes = sizes[len(sizes)-1:] // the client's report of its last size
		}
		if len(tab.rows) != len(sizes) {
			t.Fatalf("%s: %d rows, want %d:\n%s", side, len(tab.rows), len(sizes), o)
		}
		for k, row := range tab.rows {
			fields := 5
			switch {
			case lat && tc.iters == 0:
				fields = 4
			case lat:
				fields = 9
			}
			ok := len(row) == fields && row[0] == float64(sizes[k])
			if tc.iters > 0 {
				ok = ok && row[1] == float64(tc.iters)
			} else {
				ok = ok && row[1] >= 1
			}
			if lat && tc.iters > 0 {
				// t_min <= t_typical <= t_max, t_min <= t_avg, all positive
				ok = ok && row[2] > 0 && row[2] <= row[4] && row[4] <= row[3] && row[2] <= row[5]
			} else {
				ok = ok && row[fields-1] > 0
			}
			if !ok {
				t.Errorf("%s: row %v, want %d fields for %d bytes x %d:\n%s", side, row, fields, sizes[k], tc.iters, o)
			}
		}
	}
}

// TestPerfRCMUsage checks the flags -R refuses, each with its own message.
func TestPerfRCMUsage(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"perf", "send_lat", "-R", "-a", "-D", "2", "127.0.0.1"}, "-R runs all sizes (-a) by iterations, not -D"},
		{[]string{"perf", "write_bw", "-R"}, "-R needs --server or the server's ADDRESS"},
		{[]string{"perf", "write_lat", "-R", "-o", "2", "127.0.0.1"}, "-o applies to read_bw and read_lat, not write_lat"},
		{[]string{"perf", "read_lat", "-o", "2", "127.0.0.1"}, "-o applies with -R"},
		{[]string{"perf", "send_lat", "-R", "-q", "2", "127.0.0.1"}, "-q 2: the latency tests measure one connection"},
		{[]string{"perf", "read_bw", "--rdma_cm", "--json", "127.0.0.1"}, "--json and --plot do not apply with -R"},
	} {
		if code, _, stderr := runNd(t, tc.args...); code != 2 || !strings.Contains(stderr, tc.want) {
			t.Errorf("nd %s: exit %d, stderr %q; want 2 and %q", strings.Join(tc.args, " "), code, stderr, tc.want)
		}
	}
}
