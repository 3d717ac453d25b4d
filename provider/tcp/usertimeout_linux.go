//go:build linux

package tcp

import (
	"time"

	"golang.org/x/sys/unix"
)

// userTimeoutSupported: the platform bounds unacknowledged data per socket.
const userTimeoutSupported = true

// setUserTimeoutFD sets TCP_USER_TIMEOUT (milliseconds) on socket fd.
func setUserTimeoutFD(fd uintptr, d time.Duration) error {
	return unix.SetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_USER_TIMEOUT, int(min(d.Milliseconds(), 1<<31-1)))
}

// userTimeoutOf reads TCP_USER_TIMEOUT of socket fd.
func userTimeoutOf(fd uintptr) (time.Duration, error) {
	ms, err := unix.GetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_USER_TIMEOUT)
	return time.Duration(ms) * time.Millisecond, err
}
