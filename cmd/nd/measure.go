package main

// The result table of the data tests, in the layout of the ND SDK tools.

import (
	"fmt"
	"io"
	"runtime"
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
}

// meter measures one sample: start it, run the iterations, stop it.
type meter struct {
	wall time.Time
	cpu  time.Duration
}

// start records the wall clock and the process CPU time.
func (m *meter) start() {
	m.cpu = cpuTime()
	m.wall = time.Now()
}

// stop returns the wall and CPU time since start.
func (m *meter) stop() (wall, cpu time.Duration) {
	wall = time.Since(m.wall)
	return wall, cpuTime() - m.cpu
}

// printRow prints s as one row of the table: Latency in microseconds per
// iteration divided by latencyDiv, CPU as process CPU time in percent of
// wall time (above 100 when several threads were busy), Bytes/Sec over all
// messages.
func printRow(w io.Writer, s sample) {
	secs := s.wall.Seconds()
	var latency, cpu, rate float64
	if s.iters > 0 {
		latency = secs * 1e6 / float64(s.iters) / float64(s.latencyDiv)
	}
	if secs > 0 {
		cpu = 100 * s.cpu.Seconds() / secs
		rate = float64(s.msgsPerIter) * float64(s.size) * float64(s.iters) / secs
	}
	fmt.Fprintf(w, " %9d %9d %9.2f %7.2f %11.0f\n", s.size, s.iters, latency, cpu, rate)
}
