//go:build darwin

package tcp

import (
	"time"

	"golang.org/x/sys/unix"
)

// userTimeoutSupported: the platform bounds unacknowledged data per socket.
const userTimeoutSupported = true

// setUserTimeoutFD sets TCP_RXT_CONNDROPTIME (seconds: how long
// retransmissions go on before the connection is dropped) on socket fd.
func setUserTimeoutFD(fd uintptr, d time.Duration) error {
	return unix.SetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_RXT_CONNDROPTIME, wholeSeconds(d))
}

// userTimeoutOf reads TCP_RXT_CONNDROPTIME of socket fd.
func userTimeoutOf(fd uintptr) (time.Duration, error) {
	s, err := unix.GetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_RXT_CONNDROPTIME)
	return time.Duration(s) * time.Second, err
}
