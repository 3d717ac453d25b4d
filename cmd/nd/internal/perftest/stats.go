package perftest

// The statistics of nd perf's rows, computed after each step from what the
// timed loops recorded.

import (
	"math"
	"slices"

	"github.com/godirect/nd/cmd/nd/internal/timing"
)

// perfBWRow is a row of a bandwidth test, in the units of the report.
type perfBWRow struct {
	Bytes      int     `json:"bytes"`
	Iterations int64   `json:"iterations"`
	BWPeak     float64 `json:"bw_peak"`
	BWAverage  float64 `json:"bw_average"`
	MsgRate    float64 `json:"msg_rate_mpps"`
	// CPUPerOp is the client process's CPU time (user and system) over
	// the timed part, per request of every connection, in microseconds.
	CPUPerOp float64 `json:"client_cpu_usec_per_op"`
}

// perfLatRow is a row of a latency test, in microseconds.
type perfLatRow struct {
	Bytes      int     `json:"bytes"`
	Iterations int64   `json:"iterations"`
	TMin       float64 `json:"t_min_usec"`
	TMax       float64 `json:"t_max_usec"`
	TTypical   float64 `json:"t_typical_usec"`
	TAvg       float64 `json:"t_avg_usec"`
	TStdev     float64 `json:"t_stdev_usec"`
	P99        float64 `json:"p99_usec"`
	P999       float64 `json:"p99_9_usec"`
	// CPUPerOp is the client process's CPU time (user and system) over
	// the timed part, per iteration (a round trip, or a Read), in
	// microseconds.
	CPUPerOp float64 `json:"client_cpu_usec_per_op"`
}

// perfPeakWindows bounds the work of finding the peak: about this many
// start and end points are tried each.
const perfPeakWindows = 1024

// bandwidthRow aggregates the step of size bytes over the connections:
// all their bytes over the wall time from the first start to the last
// end, and the sum of their peaks. gbits reports Gb/sec, else MB/sec.
func bandwidthRow(conns []*perfConn, size int, gbits bool) perfBWRow {
	var (
		msgs        int64
		first, last timing.Instant
		peak        float64 // messages per second
	)
	for i, pc := range conns {
		msgs += int64(pc.n)
		if i == 0 || pc.start < first {
			first = pc.start
		}
		if pc.end > last {
			last = pc.end
		}
		peak += peakRate(pc.posted, pc.completed, pc.n)
	}
	secs := last.Sub(first).Seconds()
	row := perfBWRow{Bytes: size, Iterations: msgs}
	if secs <= 0 {
		return row
	}
	rate := float64(msgs) / secs
	peak = max(peak, rate) // with -D no requests were recorded
	row.BWPeak, row.BWAverage = bandwidthUnits(peak*float64(size), gbits), bandwidthUnits(rate*float64(size), gbits)
	row.MsgRate = rate / 1e6
	return row
}

// bandwidthUnits converts bytes per second to MB/sec (2^20 bytes, as
// perftest) or Gb/sec (10^9 bits).
func bandwidthUnits(bytesPerSec float64, gbits bool) float64 {
	if gbits {
		return bytesPerSec * 8 / 1e9
	}
	return bytesPerSec / (1 << 20)
}

// peakRate returns the best rate, in requests per second, of a run of
// consecutive requests: the count over the time from the first one's post
// to the last one's completion (perftest's BW peak). Times are in ns; the
// first n requests count, as far as they were recorded.
func peakRate(posted, completed []int64, n int) float64 {
	n = min(n, len(posted), len(completed))
	stride := max(1, n/perfPeakWindows)
	best := 0.0
	for i := 0; i < n; i += stride {
		for j := n - 1; j >= i; j -= stride {
			if t := completed[j] - posted[i]; t > 0 {
				best = max(best, float64(j-i+1)/float64(t))
			}
		}
	}
	return best * 1e9
}

// latencyRow summarises the latency step of test of size bytes, n
// iterations of every connection in turn: over the recorded ones in
// samples, half of each (send_lat, write_lat: half the round trip, as
// perftest) or all of it (read_lat).
func latencyRow(test *perfTest, samples []int64, n, size int) perfLatRow {
	div := 2.0
	if test.op == opRead {
		div = 1
	}
	row := perfLatRow{Bytes: size, Iterations: int64(n)}
	s := samples[:min(n, len(samples))]
	if len(s) == 0 {
		return row
	}
	slices.Sort(s)
	us := func(ns float64) float64 { return ns / div / 1e3 }
	var sum float64
	for _, v := range s {
		sum += float64(v)
	}
	mean := sum / float64(len(s))
	var squares float64
	for _, v := range s {
		d := float64(v) - mean
		squares += d * d
	}
	row.TMin, row.TMax = us(float64(s[0])), us(float64(s[len(s)-1]))
	row.TTypical = us(float64(s[len(s)/2]))
	row.TAvg = us(mean)
	row.TStdev = us(math.Sqrt(squares / float64(len(s))))
	row.P99, row.P999 = us(float64(percentile(s, 0.99))), us(float64(percentile(s, 0.999)))
	return row
}

// percentile returns the sample below which fraction p of sorted lie.
func percentile(sorted []int64, p float64) int64 {
	i := int(math.Ceil(p*float64(len(sorted)))) - 1
	return sorted[max(0, min(i, len(sorted)-1))]
}
