//go:build !linux

package tcp

import "runtime"

// yieldProcessor lets other goroutines run (see yield_linux.go; elsewhere
// the thread-level yield is left to the operating system's scheduler).
func yieldProcessor() { runtime.Gosched() }
