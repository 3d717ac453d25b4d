package timing

// The result table of the data tests, in the layout of the ND SDK tools.

import (
	"fmt"
	"io"
	"runtime"
	"slices"
	"time"
)

// timerFrequency is what the header reports as the "Sender Frequency": the
// ND tools print QueryPerformanceFrequency; nd times in nanoseconds.
const timerFrequency = 1_000_000_000

// printHeader prints the ND tools' header and column line.
func printHeader(w io.Writer) {
	fmt.Fprintf(w, "Using %d processors. Sender Frequency is %d\n\n", runtime.NumCPU(), timerFrequency)
	fmt.Fprintf(w, " %9s %9s %9s %7s %11s\n", "Size", "Iter", "Latency", "CPU", "Bytes/Sec")
}

// sample is the measurement of one message size.
type sample struct {
	size  int           // payload bytes per message
	iters int           // timed iterations
	wall  time.Duration // elapsed time
	cpu   time.Duration // process CPU time (user+system) meanwhile
	// msgsPerIter is how many messages of size bytes one iteration moves
	// (2 for a round trip); Bytes/Sec counts them all.
	msgsPerIter int
	// latencyDiv divides the time of one iteration into the reported
	// latency (2 for half a round trip).
	latencyDiv int
	// median is the median time of one iteration, when the tool recorded
	// them (RoundTimes): the Latency column reports it instead of the mean.
	median time.Duration
}

// RoundTimes records how long each iteration of a size took, so that the
// Latency column reports their median rather than the mean of ND's tools:
// on a shared host a few iterations that wait for a processor (a side
// that lost its core, a wake-up from Notify) move the mean of a quarter
// second by several times from one run to the next, and the median hardly.
// A tool uses it from one goroutine.
type RoundTimes struct{ d []time.Duration }

// NewRoundTimes returns a RoundTimes that keeps the first n iterations of
// each size (those of a timed sweep's quarter second, at any size).
func NewRoundTimes(n int) *RoundTimes { return &RoundTimes{d: make([]time.Duration, 0, n)} }

// Add records the time of one iteration; one beyond the first n of the
// size is left out. It allocates nothing.
func (r *RoundTimes) Add(d time.Duration) {
	if len(r.d) < cap(r.d) {
		r.d = append(r.d, d)
	}
}

// median returns the median of the times recorded since the last reset
// (0 when there are none), and resets.
func (r *RoundTimes) median() time.Duration {
	if r == nil || len(r.d) == 0 {
		return 0
	}
	slices.Sort(r.d)
	m := r.d[len(r.d)/2]
	r.d = r.d[:0]
	return m
}

// meter measures one sample: start it, run the iterations, stop it.
type meter struct {
	wall Instant
	cpu  time.Duration
}

// start records the wall clock and the process CPU time.
func (m *meter) start() {
	m.cpu = CPUTime()
	m.wall = Now()
}

// stop returns the wall and CPU time since start.
func (m *meter) stop() (wall, cpu time.Duration) {
	wall = Since(m.wall)
	return wall, CPUTime() - m.cpu
}

// printRow prints s as one row of the table: Latency in microseconds per
// iteration (the median when the tool recorded each, else the mean)
// divided by latencyDiv, CPU as process CPU time in percent of
// wall time (above 100 when several threads were busy), Bytes/Sec over all
// messages.
func printRow(w io.Writer, s sample) {
	secs := s.wall.Seconds()
	var latency, cpu, rate float64
	switch {
	case s.median > 0:
		latency = float64(s.median.Nanoseconds()) / 1e3 / float64(s.latencyDiv)
	case s.iters > 0:
		latency = secs * 1e6 / float64(s.iters) / float64(s.latencyDiv)
	}
	if secs > 0 {
		cpu = 100 * s.cpu.Seconds() / secs
		rate = float64(s.msgsPerIter) * float64(s.size) * float64(s.iters) / secs
	}
	fmt.Fprintf(w, " %9d %9d %9.2f %7.2f %11.0f\n", s.size, s.iters, latency, cpu, rate)
}

// The ND tools' sweep.
const (
	sweepBytes       = 500 * 4 << 20 // a size gets sweepBytes/size iterations, up to the tool's maximum
	DefaultMaxSize   = 4 << 20       // the largest message of the sweep
	WarmupIterations = 1000          // iterations before the sweep, of 1 byte
	// The tools' iterations per size at most: ndpingpong and ndrpingpong
	// make 100000 round trips, ndping and ndrping 500000 one-way transfers.
	RoundTripIterations = 100_000
	OneWayIterations    = 500_000
)

// step is one message size of the sweep and its number of iterations, or
// the time to run it for when d is not 0.
type step struct {
	Size, Iters int
	d           time.Duration
}

// Sweep returns the sizes from 1 to maxSize, doubling, with the ND tools'
// iteration count for each, min(maxIters, sweepBytes/size), capped at
// itersCap if it is not 0.
func Sweep(maxSize, maxIters, itersCap int) []step {
	var steps []step
	for size := 1; size <= maxSize; size *= 2 {
		n := max(1, min(maxIters, sweepBytes/size))
		if itersCap > 0 {
			n = min(n, itersCap)
		}
		steps = append(steps, step{Size: size, Iters: n})
		if size > maxSize/2 {
			break // the next doubling would pass maxSize (or overflow)
		}
	}
	return steps
}

// Schedule is ndpingpong's sweep: up to 100000 round trips per size.
func Schedule(maxSize, itersCap int) []step { return Sweep(maxSize, RoundTripIterations, itersCap) }

// Warmups is the number of warm-up iterations.
func Warmups(itersCap int) int {
	if itersCap > 0 {
		return min(WarmupIterations, itersCap)
	}
	return WarmupIterations
}

// TotalIters is the number of iterations of steps.
func TotalIters(steps []step) int64 {
	var n int64
	for _, s := range steps {
		n += int64(s.Iters)
	}
	return n
}

// TimedSweep returns the sizes from 1 to maxSize, doubling, each to run
// for d.
func TimedSweep(maxSize int, d time.Duration) []step {
	steps := Sweep(maxSize, 1, 0)
	for i := range steps {
		steps[i].d = d
	}
	return steps
}

// MeasureSweep prints the header to out, runs the warm-up (warm iterations
// of 1 byte) and then each step under a meter, printing a row per step as
// it completes. iterate runs n iterations of size bytes; a round trip
// moves msgsPerIter messages and latencyDiv divides its time into the
// latency (see sample). times, when not nil, is where iterate records each
// iteration's time: the rows report the median.
func MeasureSweep(out io.Writer, warm int, steps []step, msgsPerIter, latencyDiv int, times *RoundTimes, iterate func(size, n int) error) error {
	printHeader(out)
	if err := iterate(1, warm); err != nil {
		return fmt.Errorf("warm-up: %w", err)
	}
	times.median() // the warm-up's
	var m meter
	for _, st := range steps {
		m.start()
		n := st.Iters
		var err error
		if st.d > 0 {
			n, err = iterateFor(st.Size, st.d, iterate)
		} else {
			err = iterate(st.Size, n)
		}
		if err != nil {
			return fmt.Errorf("size %d: %w", st.Size, err)
		}
		wall, cpu := m.stop()
		printRow(out, sample{size: st.Size, iters: n, wall: wall, cpu: cpu, msgsPerIter: msgsPerIter, latencyDiv: latencyDiv, median: times.median()})
	}
	return nil
}

// iterateFor runs iterations of size bytes for d, in batches that iterate
// runs without looking at the clock: the first of one iteration, each next
// one at most as many as ran before (doubling) and at most as many as the
// rate so far fits in the time left. It returns the number of iterations.
func iterateFor(size int, d time.Duration, iterate func(size, n int) error) (int, error) {
	start := Now()
	done := 0
	for {
		elapsed := Since(start)
		if elapsed >= d {
			return done, nil
		}
		batch := 1
		if done > 0 {
			per := max(elapsed/time.Duration(done), 1)
			batch = max(1, min(done, int((d-elapsed)/per)))
		}
		if err := iterate(size, batch); err != nil {
			return done, err
		}
		done += batch
	}
}
