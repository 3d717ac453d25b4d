//go:build unix

package shmring

import (
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// PipeBell is a doorbell made of a pipe, for the Unix systems without
// eventfd: Ring writes a byte into the pipe, Wait reads what is there.
// Both ends are non-blocking and registered with the Go runtime's poller,
// so Wait parks the goroutine, not an OS thread. The side that waits keeps
// the read end; the side that rings needs only the write end (Fds passes
// both). Ring and Wait may run concurrently with each other and with
// Close; one goroutine at a time may Wait.
type PipeBell struct {
	r, w   *os.File
	wc     syscall.RawConn // w's, for Ring
	ringFn func(fd uintptr) bool
	one    [1]byte
	rbuf   [64]byte // Wait's buffer: a Wait takes up to 64 rings at once
}

// NewPipeBell creates a pipe doorbell.
func NewPipeBell() (*PipeBell, error) {
	var p [2]int
	if err := unix.Pipe(p[:]); err != nil {
		return nil, os.NewSyscallError("pipe", err)
	}
	return PipeBellFromFDs(p[0], p[1])
}

// ErrNotPipe: descriptors that should be a pipe's ends are something else.
var ErrNotPipe = errorString("shmring: descriptors are not a pipe's two ends")

// PipeBellFromFDs makes a doorbell of r and w, which must be the read and
// write ends of one pipe (ones received from a peer are checked: both
// FIFOs of the same inode, r readable, w writable). The PipeBell owns both
// from then on, also when it returns an error (they are then closed).
func PipeBellFromFDs(r, w int) (*PipeBell, error) {
	fail := func(err error) (*PipeBell, error) {
		unix.Close(r)
		unix.Close(w)
		return nil, err
	}
	var sr, sw unix.Stat_t
	if unix.Fstat(r, &sr) != nil || unix.Fstat(w, &sw) != nil ||
		sr.Mode&unix.S_IFMT != unix.S_IFIFO || sw.Mode&unix.S_IFMT != unix.S_IFIFO ||
		sr.Dev != sw.Dev || sr.Ino != sw.Ino || !accessMode(r, unix.O_RDONLY) || !accessMode(w, unix.O_WRONLY) {
		return fail(ErrNotPipe)
	}
	for _, fd := range []int{r, w} {
		if err := unix.SetNonblock(fd, true); err != nil {
			return fail(err)
		}
		unix.CloseOnExec(fd)
	}
	b := &PipeBell{r: os.NewFile(uintptr(r), "pipebell-r"), w: os.NewFile(uintptr(w), "pipebell-w")}
	b.one[0] = 1
	wc, err := b.w.SyscallConn()
	if err != nil {
		b.Close()
		return nil, err
	}
	b.wc = wc
	b.ringFn = b.ringFD
	return b, nil
}

// accessMode reports whether fd was opened with access mode mode.
func accessMode(fd, mode int) bool {
	fl, err := unix.FcntlInt(uintptr(fd), unix.F_GETFL, 0)
	return err == nil && fl&unix.O_ACCMODE == mode
}

// Ring implements Bell. It never blocks: a full pipe holds rings enough
// (the waiter has not taken them yet), so the byte is dropped; a closed
// doorbell ignores it. (A Write of the *os.File would wait for room in a
// full pipe, which a peer that stopped reading would make forever.)
func (b *PipeBell) Ring() { b.wc.Write(b.ringFn) }

// ringFD writes one byte without waiting; it is the callback of Ring's
// raw write, and reports the write done whatever the outcome.
func (b *PipeBell) ringFD(fd uintptr) bool {
	for {
		if _, err := unix.Write(int(fd), b.one[:]); err != unix.EINTR {
			return true
		}
	}
}

// Wait implements Waiter: it blocks until the doorbell was rung since the
// last Wait (a Wait may also return after a ring an earlier Wait already
// answered), or returns an error once the doorbell is closed.
func (b *PipeBell) Wait() error {
	_, err := b.r.Read(b.rbuf[:])
	return err
}

// Fds returns the pipe's read and write ends, to pass to the peer. They
// stay owned by b.
func (b *PipeBell) Fds() (r, w int) { return fdOf(b.r), fdOf(b.w) }

func fdOf(f *os.File) int {
	fd := -1
	if rc, err := f.SyscallConn(); err == nil {
		rc.Control(func(x uintptr) { fd = int(x) })
	}
	return fd
}

// Close closes both ends; a Wait in progress returns an error.
func (b *PipeBell) Close() error {
	b.w.Close()
	return b.r.Close()
}
