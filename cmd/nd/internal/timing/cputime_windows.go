package timing

import (
	"time"

	"golang.org/x/sys/windows"
)

// CPUTime returns the CPU time the process has used so far, user plus
// kernel, of all its threads (GetProcessTimes).
func CPUTime() time.Duration {
	var creation, exit, kernel, user windows.Filetime
	if err := windows.GetProcessTimes(windows.CurrentProcess(), &creation, &exit, &kernel, &user); err != nil {
		return 0
	}
	ticks := func(f windows.Filetime) int64 { return int64(f.HighDateTime)<<32 | int64(f.LowDateTime) }
	return time.Duration(ticks(kernel)+ticks(user)) * 100 // 100 ns units
}
