//go:build freebsd

package tcp

import "golang.org/x/sys/unix"

// fionwrite is FreeBSD's FIONWRITE, _IOR('f', 119, int): the bytes the
// send buffer still holds, which a TCP socket keeps until they are
// acknowledged.
const fionwrite = 0x40046677

// sentUnacked returns the bytes written on socket fd that the peer has not
// acknowledged.
func sentUnacked(fd uintptr) (int, error) {
	return unix.IoctlGetInt(int(fd), fionwrite)
}
