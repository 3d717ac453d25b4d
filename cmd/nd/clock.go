package main

import "time"

// instant is a reading of the tools' clock: nanoseconds from an arbitrary
// origin, monotonic. The ND tools time with QueryPerformanceCounter; so
// does nd on Windows, where time.Now advances in steps of half a
// millisecond or more (clock_windows.go). Elsewhere it is Go's monotonic
// clock.
type instant int64

// since returns the time elapsed from t to now.
func since(t instant) time.Duration { return time.Duration(now() - t) }

// sub returns t minus u.
func (t instant) sub(u instant) time.Duration { return time.Duration(t - u) }

// add returns t plus d.
func (t instant) add(d time.Duration) instant { return t + instant(d) }
