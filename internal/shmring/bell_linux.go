//go:build !shmportable

package shmring

import (
	"encoding/binary"
	"os"
	"sync"

	"golang.org/x/sys/unix"
)

// Doorbell is an eventfd used as a Bell and a Waiter. Its file is
// non-blocking and registered with the Go runtime's poller, so Wait parks
// the goroutine, not an OS thread. Ring and Wait may run concurrently with
// each other and with Close.
//
// A raw doorbell (NewRawDoorbell, RawDoorbellFromFD) is kept out of the
// runtime's poller, for an eventfd that something else watches (an epoll
// set of the caller's): a write to an eventfd wakes every epoll instance
// that holds it, and the runtime's, idle on another processor, would wake
// for nothing at every Ring. It cannot Wait.
type Doorbell struct {
	f    *os.File // nil: raw
	one  [8]byte  // the constant 1, written by Ring
	rbuf [8]byte  // Wait's buffer (one waiter at a time)

	mu sync.Mutex // raw: Ring against Close
	fd int        // raw: -1 once closed
}

// NewRawDoorbell creates a raw eventfd doorbell.
func NewRawDoorbell() (*Doorbell, error) {
	fd, err := unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC)
	if err != nil {
		return nil, os.NewSyscallError("eventfd", err)
	}
	return RawDoorbellFromFD(fd)
}

// RawDoorbellFromFD makes a raw doorbell of fd, which must be an eventfd
// (one received from a peer is checked); the Doorbell owns fd from then on,
// also when it returns an error (fd is then closed).
func RawDoorbellFromFD(fd int) (*Doorbell, error) {
	if err := adoptEventfd(fd); err != nil {
		return nil, err
	}
	d := &Doorbell{fd: fd}
	binary.NativeEndian.PutUint64(d.one[:], 1)
	return d, nil
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
	if err := adoptEventfd(fd); err != nil {
		return nil, err
	}
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
func (d *Doorbell) Ring() {
	if d.f != nil {
		d.f.Write(d.one[:])
		return
	}
	d.mu.Lock()
	if d.fd >= 0 {
		unix.Write(d.fd, d.one[:])
	}
	d.mu.Unlock()
}

// errRaw: a raw doorbell cannot be waited on.
var errRaw = errorString("shmring: a raw doorbell cannot be waited on")

// Wait implements Waiter: it blocks until the doorbell was rung since the
// last Wait, or returns an error once the doorbell is closed.
func (d *Doorbell) Wait() error {
	if d.f == nil {
		return errRaw
	}
	_, err := d.f.Read(d.rbuf[:])
	return err
}

// Fd returns the eventfd's descriptor, to pass to the peer or to watch
// (-1 once closed). It stays owned by d.
func (d *Doorbell) Fd() int {
	if d.f == nil {
		d.mu.Lock()
		defer d.mu.Unlock()
		return d.fd
	}
	var fd int
	rc, err := d.f.SyscallConn()
	if err != nil {
		return -1
	}
	rc.Control(func(x uintptr) { fd = int(x) })
	return fd
}

// Close closes the eventfd; a Wait in progress returns an error.
func (d *Doorbell) Close() error {
	if d.f != nil {
		return d.f.Close()
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.fd < 0 {
		return os.ErrClosed
	}
	err := unix.Close(d.fd)
	d.fd = -1
	return err
}

// adoptEventfd checks that fd is an eventfd and makes it non-blocking and
// close-on-exec; on an error it closes fd.
func adoptEventfd(fd int) error {
	if !IsEventfd(fd) {
		unix.Close(fd)
		return ErrNotEventfd
	}
	if err := unix.SetNonblock(fd, true); err != nil {
		unix.Close(fd)
		return err
	}
	unix.CloseOnExec(fd)
	return nil
}
