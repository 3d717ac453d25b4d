//go:build darwin

package tcp

import "golang.org/x/sys/unix"

// sentUnacked returns the bytes written on socket fd that the peer has not
// acknowledged (SO_NWRITE: the bytes the send buffer still holds, which a
// TCP socket keeps until they are acknowledged).
func sentUnacked(fd uintptr) (int, error) {
	return unix.GetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_NWRITE)
}
