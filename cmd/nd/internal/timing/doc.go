// Package timing is how nd's tools measure: a monotonic clock read without
// allocation (Instant, Now, Since), the process's CPU time (CPUTime), and
// the ND tools' sweep of message sizes with its iteration counts and the
// table it prints (Sweep, Schedule, MeasureSweep, RoundTimes).
//
// Its functions may be called from any goroutine; a RoundTimes is not safe
// for concurrent use.
package timing
