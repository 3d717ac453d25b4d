//go:build !windows

package timing

import "time"

// clockOrigin is the origin of now's readings.
var clockOrigin = time.Now()

// Now reads the clock: Go's monotonic clock since clockOrigin.
func Now() Instant { return Instant(time.Since(clockOrigin)) }
