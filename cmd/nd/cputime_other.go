//go:build !unix && !windows

package main

import "time"

// cpuTime returns 0: the process's CPU time is measured on Unix and Windows only, and
// the CPU column then reads 0.
func cpuTime() time.Duration { return 0 }
