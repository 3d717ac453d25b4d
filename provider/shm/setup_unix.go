//go:build darwin || freebsd || (linux && shmportable)

package shm

import (
	"encoding/binary"
	"net"
	"os"

	"golang.org/x/sys/unix"
)

// On macOS and FreeBSD (and on Linux with the build tag shmportable) the
// setup connection is a SOCK_STREAM Unix socket in the file system
// (transport_unix.go): macOS has no SOCK_SEQPACKET for Unix sockets, and
// one code for all three keeps what is tested on Linux what runs on the
// others. Each setup message is a frame,
//
//	length u32 (little-endian, 1..maxMessage+maxTrailer) | body
//
// written with one sendmsg, and the descriptors it passes go with it
// (SCM_RIGHTS); a receiver takes exactly one whole frame at a time, so the
// descriptors it gets while taking a frame are that frame's. The peer is
// known by its user id and, where the system says, its pid (peerCred).
type (
	setupConn = net.UnixConn
	osHandle  = int
	peerProc  = int
)

// maxTrailer is what a setup message carries beyond its body: the
// request's active address and port (setupwire.go), which a socket that
// is not bound to a name cannot tell.
const maxTrailer = activeTail

// maxFDs bounds the descriptors of one setup message: the request's
// segment and both ends of each doorbell's pipe.
const maxFDs = 1 + numBells*handlesPerBell

// frameHeader is the size of a frame's length.
const frameHeader = 4

// recvMessage takes one whole frame from the non-blocking socket fd into
// buf, and the descriptors passed with it (closed unless the caller takes
// them). It returns unix.EAGAIN while no whole frame waits: a frame is
// looked at with MSG_PEEK (no descriptor is received so) and taken only
// once all of it is there, so that no reader ever holds part of one and a
// second reader (pullSegments) finds the stream at a frame's start. A
// frame the peer cut short by closing the socket is its end (errEOF).
func recvMessage(fd int, buf []byte) ([]byte, []int, error) {
	var frame [frameHeader + maxMessage + maxTrailer]byte
	k, err := peek(fd, frame[:frameHeader])
	if err != nil {
		return nil, nil, err
	}
	if k == 0 {
		return nil, nil, errEOF
	}
	if k < frameHeader {
		return nil, nil, partial(fd)
	}
	n := int(binary.LittleEndian.Uint32(frame[:]))
	if n == 0 || n > len(frame)-frameHeader || n > len(buf) {
		// The stream cannot be followed past a frame it cannot hold.
		return nil, nil, errMessage
	}
	need := frameHeader + n
	if k, err = peek(fd, frame[:need]); err != nil {
		return nil, nil, err
	}
	if k < need {
		return nil, nil, partial(fd)
	}
	oob := make([]byte, unix.CmsgSpace(4*maxFDs))
	var (
		fds   []int
		trunc bool
	)
	for got := 0; got < need; {
		m, oobn, flags, _, err := unix.Recvmsg(fd, frame[got:need], oob, unix.MSG_DONTWAIT)
		if err == unix.EINTR {
			continue
		}
		if oobn > 0 {
			if msgs, perr := unix.ParseSocketControlMessage(oob[:oobn]); perr == nil {
				for _, cm := range msgs {
					if f, perr := unix.ParseUnixRights(&cm); perr == nil {
						for _, x := range f {
							unix.CloseOnExec(x)
						}
						fds = append(fds, f...)
					}
				}
			}
		}
		trunc = trunc || flags&unix.MSG_CTRUNC != 0
		if err != nil || m <= 0 {
			// The frame was there (peeked); losing it ends the stream.
			closeAll(fds)
			if err == nil {
				err = errEOF
			}
			return nil, nil, err
		}
		got += m
	}
	if trunc {
		// The descriptors passed did not all fit: this process has none
		// left (or the peer passed more than any message carries).
		closeAll(fds)
		return nil, nil, errNoDescriptors
	}
	return buf[:copy(buf, frame[frameHeader:need])], fds, nil
}

// peek copies the bytes waiting on fd into b without taking them; no
// descriptor is received.
func peek(fd int, b []byte) (int, error) {
	for {
		n, _, _, _, err := unix.Recvmsg(fd, b, nil, unix.MSG_PEEK|unix.MSG_DONTWAIT)
		if err != unix.EINTR {
			return n, err
		}
	}
}

// partial is recvMessage's answer to part of a frame: unix.EAGAIN to wait
// for the rest, or errEOF if the peer hung up (no more will come).
func partial(fd int) error {
	pfd := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	if n, err := unix.Poll(pfd, 0); err == nil && n > 0 && pfd[0].Revents&(unix.POLLHUP|unix.POLLERR) != 0 {
		return errEOF
	}
	return unix.EAGAIN
}

// peekMessageType returns the type (first body byte) of the frame waiting
// whole on the non-blocking socket fd without taking it, or false if none
// waits whole.
func peekMessageType(fd int) (byte, bool) {
	var frame [frameHeader + maxMessage + maxTrailer]byte
	k, err := peek(fd, frame[:frameHeader+1])
	if err != nil || k < frameHeader+1 {
		return 0, false
	}
	n := int(binary.LittleEndian.Uint32(frame[:]))
	if n == 0 || n > len(frame)-frameHeader {
		return 0, false
	}
	if k, err = peek(fd, frame[:frameHeader+n]); err != nil || k < frameHeader+n {
		return 0, false
	}
	return frame[frameHeader], true
}

// writeMessage writes b as one setup message (a frame) with the
// descriptors fds.
func writeMessage(c *net.UnixConn, b []byte, fds []int) error {
	frame := make([]byte, frameHeader+len(b))
	binary.LittleEndian.PutUint32(frame, uint32(len(b)))
	copy(frame[frameHeader:], b)
	var oob []byte
	if len(fds) > 0 {
		oob = unix.UnixRights(fds...)
	}
	n, _, err := c.WriteMsgUnix(frame, oob, nil)
	if err == nil && n < len(frame) {
		// A stream socket may take part of it; the descriptors went with
		// the first byte.
		_, err = c.Write(frame[n:])
	}
	return err
}

// peerOf returns the pid of the process at the other end of c (0 where
// the system does not say), and whether it runs as this process's
// effective user: the socket's directory admits only that user, and a
// peer of another one (root) is refused all the same.
func peerOf(c *net.UnixConn) (pid int, sameUser bool) {
	rc, err := c.SyscallConn()
	if err != nil {
		return 0, false
	}
	rc.Control(func(fd uintptr) {
		uid, p, ok := peerCred(int(fd))
		pid, sameUser = p, ok && uid == os.Geteuid()
	})
	return pid, sameUser
}
