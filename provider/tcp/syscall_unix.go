//go:build unix

package tcp

import "syscall"

// spinSupported: the reader may poll the socket with non-blocking reads.
const spinSupported = true

// readNonblocking reads from the socket's (non-blocking) descriptor once.
func readNonblocking(fd uintptr, b []byte) (int, error) { return syscall.Read(int(fd), b) }
