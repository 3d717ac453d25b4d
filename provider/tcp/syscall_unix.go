//go:build unix && !linux

package tcp

import "syscall"

// rawIO: the descriptor can be read and written without blocking.
const rawIO = true

// readNonblocking reads from the socket's (non-blocking) descriptor once.
func readNonblocking(fd uintptr, b []byte) (int, error) { return syscall.Read(int(fd), b) }

// writeNonblocking writes to the socket's (non-blocking) descriptor once.
func writeNonblocking(fd uintptr, b []byte) (int, error) { return syscall.Write(int(fd), b) }

// readvBuffers is readTwo's first place: readTwo reads into it alone here
// (it is made only for a poll's non-blocking reads, on Linux).
type readvBuffers struct{ p []byte }

func (v *readvBuffers) set(p, _ []byte) { v.p = p }
func (v *readvBuffers) clear()          { v.p = nil }

// readvNonblocking reads from the socket's (non-blocking) descriptor once
// into v's first buffer.
func readvNonblocking(fd uintptr, v *readvBuffers) (int, error) { return syscall.Read(int(fd), v.p) }
