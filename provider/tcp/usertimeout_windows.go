//go:build windows

package tcp

import (
	"time"

	"golang.org/x/sys/windows"
)

// userTimeoutSupported: the platform bounds unacknowledged data per socket.
const userTimeoutSupported = true

// setUserTimeoutFD sets TCP_MAXRT (seconds: how long retransmissions go
// on before the connection is dropped) on socket fd.
func setUserTimeoutFD(fd uintptr, d time.Duration) error {
	return windows.SetsockoptInt(windows.Handle(fd), windows.IPPROTO_TCP, windows.TCP_MAXRT, wholeSeconds(d))
}

// userTimeoutOf reads TCP_MAXRT of socket fd.
func userTimeoutOf(fd uintptr) (time.Duration, error) {
	s, err := windows.GetsockoptInt(windows.Handle(fd), windows.IPPROTO_TCP, windows.TCP_MAXRT)
	return time.Duration(s) * time.Second, err
}
