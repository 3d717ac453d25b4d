package timing

import "time"

// Instant is a reading of the tools' clock: nanoseconds from an arbitrary
// origin, monotonic. The ND tools time with QueryPerformanceCounter; so
// does nd on Windows, where time.Now advances in steps of half a
// millisecond or more (clock_windows.go). Elsewhere it is Go's monotonic
// clock.
type Instant int64

// Since returns the time elapsed from t to now.
func Since(t Instant) time.Duration { return time.Duration(Now() - t) }

// Sub returns t minus u.
func (t Instant) Sub(u Instant) time.Duration { return time.Duration(t - u) }

// Add returns t plus d.
func (t Instant) Add(d time.Duration) Instant { return t + Instant(d) }
