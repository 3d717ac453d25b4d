package perftest

// nd perf -R's output: perftest's header, its bandwidth columns, and its
// latency columns computed as perftest computes them.

import (
	"fmt"
	"io"
	"math"
	"slices"
	"time"
)

// rcmLatRow is a row of a -R latency test: by iterations perftest's nine
// columns, by time (-D) the iterations, t_avg and the iterations per
// second.
type rcmLatRow struct {
	byTime bool
	lat    perfLatRow
	tps    float64
}

// rcmIterationsRow computes the latency columns from when each iteration's
// request was posted (ns), as perftest does: an iteration's time is the
// gap to the next post, divided by rtt (2: half the round trip); sorted,
// the slowest rcmLatTail are left out; t_typical is the median of the
// rest, t_max the slowest kept, the percentiles the value at that rank.
func rcmIterationsRow(size int, stamps []int64, rtt float64) rcmLatRow {
	row := rcmLatRow{lat: perfLatRow{Bytes: size, Iterations: int64(len(stamps))}}
	if len(stamps) < 2 {
		return row
	}
	d := make([]int64, len(stamps)-1)
	for i := range d {
		d[i] = stamps[i+1] - stamps[i]
	}
	slices.Sort(d)
	m := len(d) - rcmLatTail
	if m < 1 {
		m = len(d) - 1
	}
	us := func(ns int64) float64 { return float64(ns) / rtt / 1e3 }
	median := d[m/2]
	if (m-1)%2 != 0 {
		median = (d[m/2] + d[m/2-1]) / 2
	}
	var sum float64
	for _, v := range d[:m] {
		sum += us(v)
	}
	avg := sum / float64(m)
	var sq float64
	for _, v := range d[:m] {
		sq += (avg - us(v)) * (avg - us(v))
	}
	at := func(p float64) int64 { return d[min(len(d)-1, int(math.Ceil(float64(m)*p)))] }
	l := &row.lat
	l.TMin, l.TMax, l.TTypical = us(d[0]), us(d[min(m, len(d)-1)]), us(median)
	l.TAvg, l.TStdev = avg, math.Sqrt(sq/float64(m))
	l.P99, l.P999 = us(at(0.99)), us(at(0.999))
	return row
}

// rcmDurationRow is the row of n iterations sampled over d.
func rcmDurationRow(size, n int, d time.Duration, rtt float64) rcmLatRow {
	row := rcmLatRow{byTime: true, lat: perfLatRow{Bytes: size, Iterations: int64(n)}}
	if n > 0 && d > 0 {
		row.lat.TAvg = float64(d.Nanoseconds()) / 1e3 / rtt / float64(n)
		row.tps = float64(n) / d.Seconds()
	}
	return row
}

// rcmDurationColumns are perftest's columns of a latency test by time.
var (
	rcmDurationColumns = []string{"#bytes", "#iterations", "t_avg[usec]", "tps average"}
	rcmDurationWidths  = []int{10, 14, 16, 0}
)

// rcmHeader prints perftest's header and the column line.
func (c *Config) rcmHeader(out io.Writer, client, server, peer string) {
	fmt.Fprintln(out, Line)
	fmt.Fprintf(out, "%*s\n", 20+len(c.Test.Title), c.Test.Title)
	fmt.Fprintf(out, " Protocol        : perftest %s -R (peer %s)  Connection : %s -> %s\n", rcmVersion, peer, client, server)
	fmt.Fprintf(out, " Number of qps   : %-18d TX depth   : %d\n", c.QPs, c.TxDepth)
	if c.Test.op == opRead {
		reads := "the adapter's most"
		if c.outReads > 0 {
			reads = fmt.Sprint(c.outReads)
		}
		fmt.Fprintf(out, " Outstand reads  : %s\n", reads)
	}
	if c.duration > 0 {
		fmt.Fprintf(out, " Duration        : %d sec\n", c.duration)
	}
	fmt.Fprintln(out, Line)
	switch {
	case !c.Test.Lat:
		fmt.Fprintln(out, columns([]string{"#bytes", "#iterations", "BW peak[MB/sec]", "BW average[MB/sec]", "MsgRate[Mpps]"}, bwWidths))
	case c.duration > 0:
		fmt.Fprintln(out, columns(rcmDurationColumns, rcmDurationWidths))
	default:
		fmt.Fprintln(out, columns(latColumns, latWidths))
	}
}

// rcmBWRow prints a bandwidth row.
func rcmBWRow(out io.Writer, r rcmReport) {
	fmt.Fprintln(out, columns([]string{
		fmt.Sprint(r.size), fmt.Sprint(r.iters), fmt.Sprintf("%.2f", r.peak), fmt.Sprintf("%.2f", r.average), fmt.Sprintf("%.6f", r.mRate),
	}, bwWidths))
}

// rcmPrintLat prints a latency row.
func rcmPrintLat(out io.Writer, r rcmLatRow) {
	l := r.lat
	if r.byTime {
		fmt.Fprintln(out, columns([]string{fmt.Sprint(l.Bytes), fmt.Sprint(l.Iterations), fmt.Sprintf("%.2f", l.TAvg), fmt.Sprintf("%.2f", r.tps)}, rcmDurationWidths))
		return
	}
	cells := []string{fmt.Sprint(l.Bytes), fmt.Sprint(l.Iterations)}
	for _, v := range []float64{l.TMin, l.TMax, l.TTypical, l.TAvg, l.TStdev, l.P99, l.P999} {
		cells = append(cells, fmt.Sprintf("%.2f", v))
	}
	fmt.Fprintln(out, columns(cells, latWidths))
}
