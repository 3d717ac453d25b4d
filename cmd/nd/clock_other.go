//go:build !windows

package main

import "time"

// clockOrigin is the origin of now's readings.
var clockOrigin = time.Now()

// now reads the clock: Go's monotonic clock since clockOrigin.
func now() instant { return instant(time.Since(clockOrigin)) }
