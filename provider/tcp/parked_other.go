//go:build !linux

package tcp

// readyWatch takes the parked links in turn, one at a time: without epoll
// there is no one call that tells which sockets have data.
type readyWatch struct{ rr roundRobin }

type parkCtl struct{}

func (w *readyWatch) add(*link)    {}
func (w *readyWatch) remove(*link) {}

func (w *readyWatch) ready(s *parkedSet, polled *link, out []*link) []*link {
	return w.rr.next(s, polled, out)
}
