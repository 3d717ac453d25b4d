//go:build unix && !linux

package tcp

import "syscall"

// spinSupported: the reader may poll the socket with non-blocking reads.
const spinSupported = true

// readNonblocking reads from the socket's (non-blocking) descriptor once.
func readNonblocking(fd uintptr, b []byte) (int, error) { return syscall.Read(int(fd), b) }

// peekNonblocking looks at the socket's next bytes without taking them.
func peekNonblocking(fd uintptr, b []byte) (int, error) {
	n, _, err := syscall.Recvfrom(int(fd), b, syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
	return n, err
}

// writeNonblocking writes to the socket's (non-blocking) descriptor once.
func writeNonblocking(fd uintptr, b []byte) (int, error) { return syscall.Write(int(fd), b) }
