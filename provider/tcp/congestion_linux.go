//go:build linux

package tcp

import "golang.org/x/sys/unix"

// congestionSupported: the socket's congestion control can be chosen.
const congestionSupported = true

// setCongestion sets the TCP congestion control algorithm of socket fd.
func setCongestion(fd uintptr, name string) error {
	return unix.SetsockoptString(int(fd), unix.IPPROTO_TCP, unix.TCP_CONGESTION, name)
}

// congestionOf returns the TCP congestion control algorithm of socket fd.
func congestionOf(fd uintptr) (string, error) {
	return unix.GetsockoptString(int(fd), unix.IPPROTO_TCP, unix.TCP_CONGESTION)
}
