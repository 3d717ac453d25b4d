//go:build linux

package tcp

import "golang.org/x/sys/unix"

// sentUnacked returns the bytes written on socket fd that the peer has not
// acknowledged (SIOCOUTQ: unsent and unacknowledged bytes).
func sentUnacked(fd uintptr) (int, error) {
	return unix.IoctlGetInt(int(fd), unix.SIOCOUTQ)
}
