package tcp

import (
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"
)

// perLink: Linux has a readiness set (epoll), so the provider's pollers
// move every link's bytes.
const perLink = false

// readySet is one epoll set (level-triggered, the link's slot as data) of
// a provider's link sockets, and an eventfd in it that interrupts a
// blocking wait. wait may run concurrently with add, remove and interrupt;
// open and close run under the progress's mu with no wait running.
type readySet struct {
	epfd, wakefd int // -1: not open
	opened       bool
	ctl          unix.EpollEvent // add's (the progress's mu)
}

// yieldProcessor gives the processor to another thread that is ready to
// run (runtime.Gosched only switches goroutines on this thread): a
// writer whose long write outlasted the runtime's patience runs on
// another thread, and on a process confined to one core it competes for
// that core with whoever polls.
func yieldProcessor() { unix.RawSyscall(unix.SYS_SCHED_YIELD, 0, 0, 0) }

// wakeSlot marks the eventfd's events.
const wakeSlot = -1

func (s *readySet) open() error {
	if s.opened {
		return nil
	}
	epfd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return fmt.Errorf("epoll_create1: %w", err)
	}
	wakefd, err := unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC)
	if err != nil {
		unix.Close(epfd)
		return fmt.Errorf("eventfd: %w", err)
	}
	ev := unix.EpollEvent{Events: unix.EPOLLIN, Fd: wakeSlot}
	if err := unix.EpollCtl(epfd, unix.EPOLL_CTL_ADD, wakefd, &ev); err != nil {
		unix.Close(epfd)
		unix.Close(wakefd)
		return fmt.Errorf("epoll_ctl: %w", err)
	}
	s.epfd, s.wakefd, s.opened = epfd, wakefd, true
	return nil
}

func (s *readySet) close() {
	if !s.opened {
		return
	}
	unix.Close(s.epfd)
	unix.Close(s.wakefd)
	s.epfd, s.wakefd, s.opened = -1, -1, false
}

// add puts l's socket in the set under slot; the caller holds the
// progress's mu.
func (s *readySet) add(l *link, slot int32) error {
	s.ctl = unix.EpollEvent{Events: unix.EPOLLIN | unix.EPOLLRDHUP, Fd: slot}
	var err error
	if cerr := l.sock.raw.Control(func(fd uintptr) {
		err = unix.EpollCtl(s.epfd, unix.EPOLL_CTL_ADD, int(fd), &s.ctl)
	}); cerr != nil {
		return cerr
	}
	if err != nil {
		return fmt.Errorf("epoll_ctl: %w", err)
	}
	return nil
}

// remove takes l's socket out of the set (a closed socket has left it by
// itself); the caller holds the progress's mu.
func (s *readySet) remove(l *link) {
	if !s.opened {
		return
	}
	l.sock.raw.Control(func(fd uintptr) {
		unix.EpollCtl(s.epfd, unix.EPOLL_CTL_DEL, int(fd), nil)
	})
}

// quiet stops the set from reporting l, whose reading ended, before remove
// runs. Called by l's poller while l is in the set (the set is open).
func (s *readySet) quiet(l *link) {
	epfd := s.epfd
	l.sock.raw.Control(func(fd uintptr) {
		unix.EpollCtl(epfd, unix.EPOLL_CTL_DEL, int(fd), nil)
	})
}

// interrupt ends a blocking wait.
func (s *readySet) interrupt() {
	if fd := s.wakefd; fd >= 0 && s.opened {
		var one = [8]byte{1}
		unix.Write(fd, one[:])
	}
}

// wait returns, in out's backing array, the slots of the links that have
// bytes or ended, waiting up to timeout milliseconds (-1: until one does,
// or interrupt); 0 never blocks. Each caller passes its own out. Only the
// progress goroutine (own) consumes an interrupt: an application's poll
// that saw it and drained it would leave the goroutine asleep.
func (s *readySet) wait(out []readyEvent, timeout int, own bool) []readyEvent {
	var evs [readyBatch]unix.EpollEvent
	max := min(len(out), readyBatch)
	var n int
	var err error
	if timeout == 0 {
		n, err = epollWaitNow(s.epfd, &evs, max)
	} else {
		n, err = unix.EpollWait(s.epfd, evs[:max], timeout)
	}
	if err != nil {
		return out[:0]
	}
	out = out[:0]
	for _, ev := range evs[:n] {
		if ev.Fd == wakeSlot {
			if own {
				var b [8]byte
				unix.Read(s.wakefd, b[:])
			}
			continue
		}
		out = append(out, ev.Fd)
	}
	return out
}

// epollWaitNow is epoll_wait with timeout 0 through RawSyscall6, as the
// non-blocking reads are (rawMax): it never waits.
func epollWaitNow(epfd int, evs *[readyBatch]unix.EpollEvent, max int) (int, error) {
	n, _, e := unix.RawSyscall6(unix.SYS_EPOLL_PWAIT, uintptr(epfd), uintptr(unsafe.Pointer(&evs[0])), uintptr(max), 0, 0, 0)
	if e != 0 {
		return 0, e
	}
	return int(n), nil
}
