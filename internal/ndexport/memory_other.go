//go:build !windows

package ndexport

import "unsafe"

// usableMemory reports whether the process can read and write the n bytes
// at p. Elsewhere than Windows there is no consumer but this process's own
// Go code, whose memory is.
func usableMemory(p unsafe.Pointer, n uintptr, write bool) bool { return true }
