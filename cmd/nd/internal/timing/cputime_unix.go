//go:build unix

package timing

import (
	"syscall"
	"time"
)

// CPUTime returns the CPU time the process has used so far, user plus
// system, of all its threads.
func CPUTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
