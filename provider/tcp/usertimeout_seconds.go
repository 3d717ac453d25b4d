//go:build darwin || windows

package tcp

import "time"

// wholeSeconds rounds d up to whole seconds, for the platforms whose
// option counts in seconds.
func wholeSeconds(d time.Duration) int {
	return int(min((d+time.Second-1)/time.Second, 1<<31-1))
}
