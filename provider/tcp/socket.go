package tcp

import (
	"errors"
	"io"
	"net"
	"syscall"
)

// errAgain: a non-blocking read found no data.
var errAgain = errors.New("tcp: no data yet")

// socket is a link's TCP connection as its poller and its writer use it:
// one read(2) or write(2) on the descriptor through RawConn.Control, which
// never waits and never takes the descriptor's locks, and the blocking
// calls of net.TCPConn for the rest.
//
// As the io.Reader under the link's rxBuffer it reads non-blocking while
// nonblock is set (by the holder of the link's rxMu, for a poll: no data
// gives errAgain), and blocking otherwise (the handshake, and the reader
// goroutines of perLink platforms). Only the holder of rxMu reads; only
// the holder of txMu writes.
type socket struct {
	c        *net.TCPConn
	raw      syscall.RawConn // nil: no descriptor access (then always blocking)
	nonblock bool

	// One call's buffer and outcome, and the functions that make it, built
	// once so that a call allocates nothing.
	rbuf    []byte
	rn      int
	rerrno  syscall.Errno
	readFn  func(fd uintptr)
	iov     readvBuffers // readTwo's
	readvFn func(fd uintptr)
	wbuf    []byte
	wn      int
	werr    error
	wrFn    func(fd uintptr)
}

func newSocket(c *net.TCPConn) *socket {
	s := &socket{c: c}
	if raw, err := c.SyscallConn(); err == nil && rawIO {
		s.raw = raw
	}
	s.readFn = func(fd uintptr) {
		m, err := readNonblocking(fd, s.rbuf)
		s.rn, s.rerrno = outcome(m, err)
	}
	s.readvFn = func(fd uintptr) {
		m, err := readvNonblocking(fd, &s.iov)
		s.rn, s.rerrno = outcome(m, err)
	}
	s.wrFn = func(fd uintptr) { s.wn, s.werr = writeNonblocking(fd, s.wbuf) }
	return s
}

// outcome maps a non-blocking call's result: bytes, or errno 0 with no
// bytes for the end of the stream, or the errno (EAGAIN: nothing yet).
func outcome(m int, err error) (int, syscall.Errno) {
	if err == nil {
		return max(m, 0), 0
	}
	if e, ok := err.(syscall.Errno); ok {
		return 0, e
	}
	return 0, syscall.EIO
}

// Read implements io.Reader.
func (s *socket) Read(p []byte) (int, error) {
	if s.raw == nil || !s.nonblock || len(p) == 0 {
		return s.c.Read(p)
	}
	s.rbuf = p
	err := s.raw.Control(s.readFn)
	s.rbuf = nil
	return s.result(err)
}

// readTwo reads into p and then q with one non-blocking call (readv(2)
// where the platform has it; elsewhere into p alone) and returns how many
// bytes it read into the two. Blocking (nonblock not set) it is Read(p).
// p and q are not empty.
func (s *socket) readTwo(p, q []byte) (int, error) {
	if s.raw == nil || !s.nonblock {
		return s.c.Read(p)
	}
	s.iov.set(p, q)
	err := s.raw.Control(s.readvFn)
	s.iov.clear()
	return s.result(err)
}

// result maps the outcome of a non-blocking read made through
// RawConn.Control (err is Control's own error).
func (s *socket) result(err error) (int, error) {
	switch {
	case err != nil:
		return 0, net.ErrClosed
	case s.rn > 0:
		return s.rn, nil
	case s.rerrno == 0:
		return 0, io.EOF
	case s.rerrno == syscall.EAGAIN:
		return 0, errAgain
	}
	return 0, s.rerrno
}

// writeNow returns how many bytes of b the socket took at once; a full
// send buffer is not an error (0 bytes). Without descriptor access it
// takes nothing.
func (s *socket) writeNow(b []byte) (int, error) {
	if s.raw == nil {
		return 0, nil
	}
	s.wbuf = b
	err := s.raw.Control(s.wrFn)
	s.wbuf = nil
	if err != nil {
		return 0, err
	}
	if s.werr == syscall.EAGAIN {
		return 0, nil
	}
	return max(s.wn, 0), s.werr
}
