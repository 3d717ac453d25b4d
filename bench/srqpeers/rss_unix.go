//go:build unix

package main

import (
	"runtime"
	"syscall"
)

// maxRSSKiB returns the process's peak resident memory in KiB (getrusage's
// ru_maxrss, which Darwin reports in bytes and the others in KiB).
func maxRSSKiB() int64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return -1
	}
	if runtime.GOOS == "darwin" {
		return int64(ru.Maxrss) / 1024
	}
	return int64(ru.Maxrss)
}
