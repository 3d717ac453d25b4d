//go:build linux && !shmportable

package shm

import (
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/godirect/nd/internal/shmring"
)

// The readiness set's kernel side on Linux: an epoll instance holding the
// links' inbound data doorbells (eventfds), edge-triggered, each with its
// link's slot (Fd) and generation (Pad) as data, and an eventfd that
// interrupts a blocking wait (wakeSlot).

// readyEvent is one rung doorbell as the set reports it: Fd is the link's
// slot, Pad its generation.
type readyEvent = unix.EpollEvent

// readyReg is a link's registration in the set: its doorbell's eventfd.
type readyReg = int

// readySet is an epoll instance and its interrupting eventfd; it is a
// value, copied by the progress goroutine, whose descriptors stay open
// until close.
type readySet struct{ epfd, wakefd int }

// noReadySet is a set that is not open.
var noReadySet = readySet{epfd: -1, wakefd: -1}

// wakeSlot marks the interrupting eventfd's events.
const wakeSlot = -1

// openReadySet creates the epoll instance and its interrupting eventfd.
func openReadySet() (readySet, error) {
	epfd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return noReadySet, resourceError("epoll_create1", err)
	}
	wakefd, err := unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC)
	if err != nil {
		unix.Close(epfd)
		return noReadySet, resourceError("eventfd", err)
	}
	ev := unix.EpollEvent{Events: unix.EPOLLIN, Fd: wakeSlot}
	if err := unix.EpollCtl(epfd, unix.EPOLL_CTL_ADD, wakefd, &ev); err != nil {
		unix.Close(epfd)
		unix.Close(wakefd)
		return noReadySet, resourceError("epoll_ctl", err)
	}
	return readySet{epfd: epfd, wakefd: wakefd}, nil
}

// close closes the set's descriptors.
func (s readySet) close() {
	unix.Close(s.epfd)
	unix.Close(s.wakefd)
}

// wake interrupts a blocking wait of the set (now or the next one).
func (s readySet) wake() {
	one := [8]byte{1}
	unix.Write(s.wakefd, one[:])
}

// add puts the doorbell b of the link in slot with generation gen into the
// set; ctl is the caller's scratch event.
func (s readySet) add(b *shmring.Doorbell, slot int32, gen uint32, ctl *readyEvent) (readyReg, error) {
	fd := b.Fd()
	*ctl = unix.EpollEvent{Events: unix.EPOLLIN | unix.EPOLLET, Fd: slot, Pad: int32(gen)}
	if err := unix.EpollCtl(s.epfd, unix.EPOLL_CTL_ADD, fd, ctl); err != nil {
		return -1, resourceError("epoll_ctl", err)
	}
	return fd, nil
}

// remove takes a doorbell out of the set explicitly: the peer holds the
// same eventfd open, so closing ours would not take it out.
func (s readySet) remove(r readyReg) {
	unix.EpollCtl(s.epfd, unix.EPOLL_CTL_DEL, r, nil)
}

// wait returns, in out's backing array, the events of the links whose
// doorbell rang, waiting up to timeout milliseconds (-1: until one rings,
// or the set is woken); 0 never blocks. clearWake consumes a pending
// wake (the progress goroutine's wait); otherwise it stays. Each caller
// passes its own out.
func (s readySet) wait(out []readyEvent, timeout int, clearWake bool) []readyEvent {
	var n int
	var err error
	for {
		if timeout == 0 {
			n, err = epollWaitNow(s.epfd, out)
		} else {
			n, err = unix.EpollWait(s.epfd, out, timeout)
		}
		if err != unix.EINTR {
			break
		}
	}
	if err != nil {
		return out[:0]
	}
	k := 0
	for _, ev := range out[:n] {
		if ev.Fd == wakeSlot {
			if clearWake {
				var b [8]byte
				unix.Read(s.wakefd, b[:])
			}
			continue
		}
		out[k] = ev
		k++
	}
	return out[:k]
}

// epollWaitNow is epoll_wait with timeout 0 through RawSyscall6: it never
// waits, so it need not hand the processor to the runtime (an application
// polling in a loop makes it often). The pointer is out's first element,
// a Go slice kept alive by the call, and the kernel writes at most len(out)
// events into it (this is the file's use of unsafe).
func epollWaitNow(epfd int, out []unix.EpollEvent) (int, error) {
	if len(out) == 0 {
		return 0, nil
	}
	n, _, e := unix.RawSyscall6(unix.SYS_EPOLL_PWAIT, uintptr(epfd), uintptr(unsafe.Pointer(&out[0])), uintptr(len(out)), 0, 0, 0)
	if e != 0 {
		return 0, e
	}
	return int(n), nil
}
