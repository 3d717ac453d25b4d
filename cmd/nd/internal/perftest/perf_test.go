package perftest

import (
	_ "image/png" // image.DecodeConfig of the plots
	"os"
	"strings"
	"testing"

	"github.com/godirect/nd/cmd/nd/internal/datapath"
	"github.com/godirect/nd/cmd/nd/internal/session"
)

func TestPerfProgress(t *testing.T) {
	if isTerminal(&strings.Builder{}) || isTerminal(os.NewFile(^uintptr(0), "none")) {
		t.Error("isTerminal of something that is no terminal")
	}
	var out, progress strings.Builder
	c := &Config{Test: TestNamed("write_bw"), progressTo: &progress}
	r := &perfReport{cfg: c, out: &out}
	r.progress(0, 2, 2)
	r.addBW(perfBWRow{Bytes: 2, Iterations: 1, BWPeak: 1, BWAverage: 1, MsgRate: 1})
	r.progress(1, 2, 4)
	r.clearProgress()
	if got, want := progress.String(), "\r\033[K nd perf write_bw: 2 bytes (size 1 of 2) ...\r\033[K\r\033[K nd perf write_bw: 4 bytes (size 2 of 2) ...\r\033[K"; got != want {
		t.Errorf("progress %q, want %q", got, want)
	}
	if strings.Contains(out.String(), "\r") {
		t.Errorf("the table has the progress line: %q", out.String())
	}
}

func TestPerfStats(t *testing.T) {
	// Four requests one after another, 10 ns each, then four at once.
	posted := []int64{0, 10, 20, 30, 40, 40, 40, 40}
	completed := []int64{10, 20, 30, 40, 41, 42, 43, 44}
	if got := peakRate(posted, completed, len(posted)); got != 1e9 {
		t.Errorf("peakRate = %v, want 1e9 (the last four in 4 ns)", got)
	}
	if got := peakRate(nil, nil, 5); got != 0 {
		t.Errorf("peakRate of nothing recorded = %v", got)
	}
	samples := []int64{5000, 1000, 3000, 2000, 4000, 0}
	row := latencyRow(TestNamed("read_lat"), samples, 5, 2)
	if row.TMin != 1 || row.TMax != 5 || row.TTypical != 3 || row.TAvg != 3 || row.P99 != 5 || row.Iterations != 5 ||
		row.TStdev < 1.41 || row.TStdev > 1.42 {
		t.Errorf("latencyRow = %+v", row)
	}
	// Half the round trip.
	if row := latencyRow(TestNamed("send_lat"), samples, 5, 2); row.TMax != 2.5 {
		t.Errorf("send_lat's t_max = %v, want 2.5", row.TMax)
	}
	if got := bandwidthUnits(1<<20, false); got != 1 {
		t.Errorf("1 MiB/s = %v MB/sec", got)
	}
	if got := bandwidthUnits(125e6, true); got != 1 {
		t.Errorf("125e6 B/s = %v Gb/sec", got)
	}
}

func TestPerfWire(t *testing.T) {
	h := perfHello{test: TestNamed("read_bw"), qp: 3, qps: 4, txDepth: 1 << 16, maxSize: 1 << 23}
	got, err := parsePerfHello(h.wire())
	if err != nil || got.test != h.test || got.qp != 3 || got.qps != 4 || got.txDepth != 1<<16 || got.maxSize != 1<<23 {
		t.Errorf("hello round trip: %+v, %v", got, err)
	}
	h.useSRQ = true
	got, err = parsePerfHello(h.wire())
	if err != nil || !got.useSRQ || got.txDepth != 1<<16 || got.qps != 4 {
		t.Errorf("hello round trip with useSRQ: %+v, %v", got, err)
	}
	if _, err := parsePerfHello(session.PingGreeting.Hello(session.Hello{MaxSize: 1})); err == nil {
		t.Error("nd perf took an nd ping hello")
	}
	m := perfMsg{kind: msgEnd, credits: 7, value: 12345, iters: 6, window: datapath.WindowMsg{ReadLimit: 9}}
	var b [perfMsgSize]byte
	if got, err := parsePerfMsg(m.put(b[:]), perfMsgSize); err != nil || got != m {
		t.Errorf("message round trip: %+v, %v", got, err)
	}
	if _, err := parsePerfMsg(b[:], 3); err == nil {
		t.Error("a 3-byte control message parsed")
	}
	if !isDone(perfMsg{kind: msgDone}.put(b[:]), perfMsgSize) {
		t.Error("isDone of a done message")
	}
}

// TestPerfWarmup: the warm-up's default length (-w unset) follows -n, at
// most 10000 round trips (lat) or 256 MiB of messages (bw); -w sets it.
func TestPerfWarmup(t *testing.T) {
	for _, tc := range []struct {
		test        string
		iters, warm int
		size, qps   int
		wantIt      int
	}{
		{"send_lat", 1000, -1, 8, 1, 1000},
		{"send_lat", 50000, -1, 8, 1, 10000},
		{"write_lat", 50000, 0, 8, 1, 0},
		{"send_bw", 500, -1, 1 << 20, 1, 256},
		{"write_bw", 2000, -1, 64 << 10, 1, 2000},
		{"read_bw", 5000, -1, 128 << 10, 1, 2048},
		{"read_bw", 5000, 7, 128 << 10, 1, 7},
		{"send_lat", 1000, -1, 8, 100, 100},       // -q 100: 10000 round trips in all
		{"read_lat", 1000, -1, 8, 4096, 2},        // 10000 / 4096, rounded down
		{"write_bw", 2000, -1, 64 << 10, 3, 2000}, // bw: per connection
	} {
		c := &Config{Test: TestNamed(tc.test), Iters: tc.iters, Warmup: tc.warm, QPs: tc.qps}
		if got := c.warmupIters(tc.size); got != tc.wantIt {
			t.Errorf("%s -n %d -w %d -s %d -q %d: %d warm-up iterations, want %d", tc.test, tc.iters, tc.warm, tc.size, tc.qps, got, tc.wantIt)
		}
	}
}
