//go:build linux && !shmportable

package shm

import (
	"net"

	"golang.org/x/sys/unix"
)

// The setup connection on Linux is a SOCK_SEQPACKET Unix socket; the
// descriptors of a setup message pass with SCM_RIGHTS, and the peer is
// known by its pid (SO_PEERCRED).
type (
	setupConn = net.UnixConn
	osHandle  = int
	peerProc  = int
)

// recvMessage receives one setup message from the non-blocking socket fd
// and the descriptors passed with it (closed unless the caller takes
// them). It returns unix.EAGAIN when no message waits.
func recvMessage(fd int, buf []byte) ([]byte, []int, error) {
	oob := make([]byte, unix.CmsgSpace(4*(1+numBells)))
	var (
		n, oobn, flags int
		err            error
	)
	for {
		n, oobn, flags, _, err = unix.Recvmsg(fd, buf, oob, unix.MSG_DONTWAIT|unix.MSG_CMSG_CLOEXEC)
		if err != unix.EINTR {
			break
		}
	}
	var fds []int
	if err == nil && oobn > 0 {
		if msgs, perr := unix.ParseSocketControlMessage(oob[:oobn]); perr == nil {
			for _, m := range msgs {
				if f, perr := unix.ParseUnixRights(&m); perr == nil {
					fds = append(fds, f...)
				}
			}
		}
	}
	if err != nil {
		return nil, nil, err
	}
	if n == 0 {
		closeAll(fds)
		return nil, nil, errEOF
	}
	if flags&unix.MSG_CTRUNC != 0 {
		// The descriptors passed did not all fit: this process has none
		// left (or the peer passed more than any message carries).
		closeAll(fds)
		return nil, nil, errNoDescriptors
	}
	if flags&unix.MSG_TRUNC != 0 {
		closeAll(fds)
		return nil, nil, errMessage
	}
	return buf[:n], fds, nil
}

// peekMessageType returns the first byte of the message waiting on the
// non-blocking socket fd without taking the message, or false if none
// waits.
func peekMessageType(fd int) (byte, bool) {
	var b [1]byte
	for {
		n, _, _, _, err := unix.Recvmsg(fd, b[:], nil, unix.MSG_PEEK|unix.MSG_DONTWAIT)
		if err == unix.EINTR {
			continue
		}
		return b[0], err == nil && n == 1
	}
}

// peerPID returns the pid of the process at the other end of c.
func peerPID(c *net.UnixConn) int {
	rc, err := c.SyscallConn()
	if err != nil {
		return 0
	}
	pid := 0
	rc.Control(func(fd uintptr) {
		if cred, err := unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED); err == nil {
			pid = int(cred.Pid)
		}
	})
	return pid
}

// writeMessage writes b as one setup message (one packet) with the
// descriptors fds.
func writeMessage(c *net.UnixConn, b []byte, fds []int) error {
	var oob []byte
	if len(fds) > 0 {
		oob = unix.UnixRights(fds...)
	}
	_, _, err := c.WriteMsgUnix(b, oob, nil)
	return err
}

// maxTrailer is what a setup message carries beyond its body: nothing on
// Linux (descriptors pass beside it).
const maxTrailer = 0
