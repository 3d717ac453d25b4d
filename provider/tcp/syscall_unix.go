//go:build unix && !linux

package tcp

import "syscall"

// rawIO: the descriptor can be read and written without blocking.
const rawIO = true

// readNonblocking reads from the socket's (non-blocking) descriptor once.
func readNonblocking(fd uintptr, b []byte) (int, error) { return syscall.Read(int(fd), b) }

// writeNonblocking writes to the socket's (non-blocking) descriptor once.
func writeNonblocking(fd uintptr, b []byte) (int, error) { return syscall.Write(int(fd), b) }
