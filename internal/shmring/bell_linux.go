package shmring

import (
	"encoding/binary"
	"os"

	"golang.org/x/sys/unix"
)

// Doorbell is an eventfd used as a Bell and a Waiter. Its file is
// non-blocking and registered with the Go runtime's poller, so Wait parks
// the goroutine, not an OS thread. Ring and Wait may run concurrently with
// each other and with Close.
type Doorbell struct {
	f    *os.File
	one  [8]byte // the constant 1, written by Ring
	rbuf [8]byte // Wait's buffer (one waiter at a time)
}

// NewDoorbell creates an eventfd doorbell.
func NewDoorbell() (*Doorbell, error) {
	fd, err := unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC)
	if err != nil {
		return nil, os.NewSyscallError("eventfd", err)
	}
	return DoorbellFromFD(fd)
}

// DoorbellFromFD makes a doorbell of fd, which must be an eventfd (one
// received from a peer is checked); the Doorbell owns fd from then on,
// also when it returns an error (fd is then closed).
func DoorbellFromFD(fd int) (*Doorbell, error) {
	if !IsEventfd(fd) {
		unix.Close(fd)
		return nil, ErrNotEventfd
	}
	if err := unix.SetNonblock(fd, true); err != nil {
		unix.Close(fd)
		return nil, err
	}
	unix.CloseOnExec(fd)
	d := &Doorbell{f: os.NewFile(uintptr(fd), "eventfd")}
	binary.NativeEndian.PutUint64(d.one[:], 1)
	return d, nil
}

// ErrNotEventfd: a descriptor that should be an eventfd is something else.
var ErrNotEventfd = errorString("shmring: descriptor is not an eventfd")

// IsEventfd reports whether fd is an eventfd.
func IsEventfd(fd int) bool {
	var buf [32]byte
	n, err := unix.Readlink("/proc/self/fd/"+itoa(fd), buf[:])
	return err == nil && string(buf[:n]) == "anon_inode:[eventfd]"
}

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	var b [20]byte
	i := len(b)
	for ; n > 0; n /= 10 {
		i--
		b[i] = byte('0' + n%10)
	}
	return string(b[i:])
}

// Ring implements Bell. A closed doorbell ignores it.
func (d *Doorbell) Ring() { d.f.Write(d.one[:]) }

// Wait implements Waiter: it blocks until the doorbell was rung since the
// last Wait, or returns an error once the doorbell is closed.
func (d *Doorbell) Wait() error {
	_, err := d.f.Read(d.rbuf[:])
	return err
}

// Fd returns the eventfd's descriptor, to pass to the peer. It stays owned
// by d.
func (d *Doorbell) Fd() int {
	var fd int
	rc, err := d.f.SyscallConn()
	if err != nil {
		return -1
	}
	rc.Control(func(x uintptr) { fd = int(x) })
	return fd
}

// Close closes the eventfd; a Wait in progress returns an error.
func (d *Doorbell) Close() error { return d.f.Close() }
