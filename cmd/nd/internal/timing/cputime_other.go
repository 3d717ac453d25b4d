//go:build !unix && !windows

package timing

import "time"

// CPUTime returns 0: the process's CPU time is measured on Unix and Windows only, and
// the CPU column then reads 0.
func CPUTime() time.Duration { return 0 }
