//go:build linux || darwin || freebsd

package shm

import (
	"net"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// readMessage reads one setup message and the descriptors passed with it
// (closed unless the caller takes them). It honours c's read deadline. If
// mu is not nil, each receive runs under it (a link's socket has a second
// reader, pullSegments).
func readMessage(c *net.UnixConn, buf []byte, mu *sync.Mutex) ([]byte, []int, error) {
	rc, err := c.SyscallConn()
	if err != nil {
		return nil, nil, err
	}
	var (
		msg  []byte
		fds  []int
		rerr error
	)
	err = rc.Read(func(fd uintptr) bool {
		if mu != nil {
			mu.Lock()
			defer mu.Unlock()
		}
		msg, fds, rerr = recvMessage(int(fd), buf)
		return rerr != unix.EAGAIN
	})
	if err != nil {
		return nil, nil, err
	}
	return msg, fds, rerr
}

func closeAll(fds []osHandle) {
	for _, fd := range fds {
		if fd >= 0 {
			unix.Close(fd)
		}
	}
}

// send writes one setup message, with descriptors.
func (l *link) send(b []byte, fds []osHandle) error {
	l.sendMu.Lock()
	defer l.sendMu.Unlock()
	l.conn.SetWriteDeadline(time.Now().Add(l.t.p.cfg.HandshakeTimeout))
	return writeMessage(l.conn, b, fds)
}
