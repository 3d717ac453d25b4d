//go:build !unix

package main

import "time"

// cpuTime returns 0: the process's CPU time is only measured on Unix, and
// the CPU column then reads 0.
func cpuTime() time.Duration { return 0 }
