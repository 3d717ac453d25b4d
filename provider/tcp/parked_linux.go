package tcp

import (
	"golang.org/x/sys/unix"
)

// readyWatch keeps the sockets of the parked links in one epoll set of the
// process (level-triggered EPOLLIN, the link's parked ID as data), so that
// one epoll_wait tells which have data, whatever their number. A socket
// that closes leaves the set by itself.
type readyWatch struct {
	epfd   int // 0: not made yet; -1: unavailable (round-robin instead)
	events [16]unix.EpollEvent
	rr     roundRobin
}

func (w *readyWatch) add(l *link) {
	if w.epfd == 0 {
		fd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
		if err != nil {
			fd = -1
		}
		w.epfd = fd
	}
	if w.epfd < 0 || l.sr.raw == nil {
		return
	}
	ev := unix.EpollEvent{Events: unix.EPOLLIN | unix.EPOLLRDHUP, Fd: l.parkedID}
	l.sr.raw.Control(func(fd uintptr) { unix.EpollCtl(w.epfd, unix.EPOLL_CTL_ADD, int(fd), &ev) })
}

func (w *readyWatch) remove(l *link) {
	if w.epfd <= 0 || l.sr.raw == nil {
		return
	}
	// A closed socket has left the set already (and Control fails).
	l.sr.raw.Control(func(fd uintptr) { unix.EpollCtl(w.epfd, unix.EPOLL_CTL_DEL, int(fd), nil) })
}

// ready appends to out the parked links other than polled with data; s.mu
// held.
func (w *readyWatch) ready(s *parkedSet, polled *link, out []*link) []*link {
	if w.epfd <= 0 {
		return w.rr.next(s, polled, out)
	}
	n, err := unix.EpollWait(w.epfd, w.events[:], 0)
	if err != nil {
		return out
	}
	for _, ev := range w.events[:n] {
		if h := s.byID[ev.Fd]; h != nil && h != polled {
			out = append(out, h)
		}
	}
	return out
}
