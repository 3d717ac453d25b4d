package tcp

import (
	"golang.org/x/sys/unix"
)

// readyWatch keeps the sockets of the parked links in one epoll set of the
// process (level-triggered EPOLLIN, the link's parked ID as data), so that
// one epoll_wait tells which have data, whatever their number. A socket
// that closes leaves the set by itself.
type readyWatch struct {
	epfd   int                 // 0: not made yet; -1: unavailable (round-robin instead)
	events [16]unix.EpollEvent // under the parked set's mu
	rr     roundRobin
}

// parkCtl is a link's epoll_ctl call, made once so that parking, which a
// streaming link does often, allocates nothing. Only the holder of the
// parked set's mu uses it.
type parkCtl struct {
	op int
	ev unix.EpollEvent
	fn func(fd uintptr)
}

func (w *readyWatch) add(l *link) {
	if w.epfd == 0 {
		fd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
		if err != nil {
			fd = -1
		}
		w.epfd = fd
	}
	w.ctl(l, unix.EPOLL_CTL_ADD)
}

func (w *readyWatch) remove(l *link) {
	// A closed socket has left the set already (and Control fails).
	w.ctl(l, unix.EPOLL_CTL_DEL)
}

func (w *readyWatch) ctl(l *link, op int) {
	if w.epfd <= 0 || l.sr.raw == nil {
		return
	}
	c := &l.parkCtl
	if c.fn == nil {
		c.fn = func(fd uintptr) { unix.EpollCtl(w.epfd, c.op, int(fd), &c.ev) }
	}
	c.op = op
	c.ev = unix.EpollEvent{Events: unix.EPOLLIN | unix.EPOLLRDHUP, Fd: l.parkedID}
	l.sr.raw.Control(c.fn)
}

// ready appends to out the parked links other than polled with data; s.mu
// held.
func (w *readyWatch) ready(s *parkedSet, polled *link, out []*link) []*link {
	if w.epfd <= 0 {
		return w.rr.next(s, polled, out)
	}
	n, err := unix.EpollWait(w.epfd, w.events[:min(len(w.events), cap(out)-len(out))], 0)
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
