package ndnet

import (
	"fmt"
	"testing"
)

// oldShutdown is the shutdown as separate flags, the way Conn kept it
// before the shutdown type: the reference the transitions are checked
// against.
type oldShutdown struct {
	closed, writeShut           bool
	finDue, finSent, finClosed  bool
	closeDue, closeSent         bool
	finAckDue, finAckSent       bool
	peerFin, peerClosed, peerFA bool
}

// shutdownEvent is one thing that happens to a connection's shutdown.
type shutdownEvent struct {
	name string
	new  func(*shutdown) bool
	old  func(*oldShutdown) bool
}

var shutdownEvents = []shutdownEvent{
	{"CloseWrite", (*shutdown).closeWrite, func(o *oldShutdown) bool {
		if o.closed {
			return false
		}
		if !o.writeShut {
			o.writeShut, o.finDue = true, true
		}
		return true
	}},
	{"Close", (*shutdown).closeConn, func(o *oldShutdown) bool {
		if o.closed {
			return false
		}
		o.closed = true
		if !o.writeShut {
			o.writeShut, o.finDue, o.finClosed = true, true, true
		} else {
			o.closeDue = true
		}
		return true
	}},
	{"fin out", (*shutdown).finOut, func(o *oldShutdown) bool {
		if !o.finDue || o.finSent {
			return false
		}
		o.finSent = true
		return true
	}},
	{"close out", (*shutdown).closeOut, func(o *oldShutdown) bool {
		if !o.closeDue || !o.finSent || o.closeSent {
			return false
		}
		o.closeSent = true
		return true
	}},
	{"finAck out", (*shutdown).ackOut, func(o *oldShutdown) bool {
		if !o.finAckDue || o.finAckSent {
			return false
		}
		o.finAckSent = true
		return true
	}},
	{"peer fin", func(s *shutdown) bool { return s.peerFin(false) }, func(o *oldShutdown) bool {
		if o.peerFin {
			return false
		}
		o.peerFin, o.finAckDue = true, true
		return true
	}},
	{"peer fin closed", func(s *shutdown) bool { return s.peerFin(true) }, func(o *oldShutdown) bool {
		if o.peerFin {
			return false
		}
		o.peerFin, o.peerClosed, o.finAckDue = true, true, true
		return true
	}},
	{"peer close", (*shutdown).peerClose, func(o *oldShutdown) bool {
		if !o.peerFin || o.peerClosed {
			return false
		}
		o.peerClosed = true
		return true
	}},
	{"peer finAck", (*shutdown).peerFinAck, func(o *oldShutdown) bool {
		if !o.finSent || o.peerFA {
			return false
		}
		o.peerFA = true
		return true
	}},
}

// agree fails the test unless s answers every question as o does.
func agree(t *testing.T, path string, s shutdown, o oldShutdown) {
	t.Helper()
	var oldFlags uint8
	if o.finClosed {
		oldFlags = flagClosed
	}
	checks := []struct {
		what     string
		got, old any
	}{
		{"writeShut", s.writeShut(), o.writeShut},
		{"sendFin", s.sendFin(), o.finDue && !o.finSent},
		{"sendClose", s.sendClose(), o.closeDue && o.finSent && !o.closeSent},
		{"sendAck", s.sendAck(), o.finAckDue && !o.finAckSent},
		{"finFlags", s.finFlags(), oldFlags},
		{"peer finished", s.peer != peerOpen, o.peerFin},
		{"peer closed", s.peer == peerClosed, o.peerClosed},
		{"closeDone", s.closeDone(), o.peerFA && (!o.closeDue || o.closeSent)},
		{"closed", s.closed, o.closed},
	}
	for _, c := range checks {
		if c.got != c.old {
			t.Fatalf("after %s: %s = %v, want %v", path, c.what, c.got, c.old)
		}
	}
}

// TestShutdownTransitions applies every shutdown event in every state
// reachable from an open connection, and checks that each transition is
// allowed or refused as the flags it replaced allowed it, leaving the same
// answers to every question Conn asks.
func TestShutdownTransitions(t *testing.T) {
	type pair struct {
		s shutdown
		o oldShutdown
	}
	paths := map[pair]string{{}: "open"}
	queue := []pair{{}}
	refused := map[string]bool{}
	for len(queue) > 0 {
		n := queue[0]
		queue = queue[1:]
		path := paths[n]
		agree(t, path, n.s, n.o)
		for _, ev := range shutdownEvents {
			next := n
			okNew, okOld := ev.new(&next.s), ev.old(&next.o)
			if okNew != okOld {
				t.Fatalf("after %s: %s allowed = %v, want %v", path, ev.name, okNew, okOld)
			}
			if !okNew {
				refused[ev.name] = true
				if next.s != n.s {
					t.Fatalf("after %s: refused %s changed the state %v to %v", path, ev.name, n.s, next.s)
				}
				continue
			}
			if _, seen := paths[next]; !seen {
				paths[next] = path + ", " + ev.name
				queue = append(queue, next)
			}
		}
	}
	// Every event but CloseWrite (which a repeat leaves alone) is refused
	// somewhere, and the walk reached the combinations of this side's and
	// the peer's progress.
	for _, ev := range shutdownEvents {
		if !refused[ev.name] && ev.name != "CloseWrite" {
			t.Errorf("%s was never refused", ev.name)
		}
	}
	states := map[shutdown]bool{}
	for p := range paths {
		states[p.s] = true
	}
	if len(states) < 40 {
		t.Errorf("the walk reached %d states; want at least 40", len(states))
	}
}

// TestShutdownRefuses names the illegal transitions the protocol checks:
// each is refused and changes nothing.
func TestShutdownRefuses(t *testing.T) {
	for _, tt := range []struct {
		name  string
		setup func(*shutdown)
		event func(*shutdown) bool
	}{
		{"a second Close", func(s *shutdown) { s.closeConn() }, (*shutdown).closeConn},
		{"CloseWrite after Close", func(s *shutdown) { s.closeConn() }, (*shutdown).closeWrite},
		{"a second peer fin", func(s *shutdown) { s.peerFin(false) }, func(s *shutdown) bool { return s.peerFin(false) }},
		{"a peer close without its fin", func(*shutdown) {}, (*shutdown).peerClose},
		{"a peer close after a closing fin", func(s *shutdown) { s.peerFin(true) }, (*shutdown).peerClose},
		{"a finAck before the fin is out", func(s *shutdown) { s.closeWrite() }, (*shutdown).peerFinAck},
		{"a second finAck", func(s *shutdown) { s.closeWrite(); s.finOut(); s.peerFinAck() }, (*shutdown).peerFinAck},
		{"the close frame before the fin", func(s *shutdown) { s.closeWrite(); s.closeConn() }, (*shutdown).closeOut},
		{"a fin nobody asked for", func(*shutdown) {}, (*shutdown).finOut},
		{"a finAck with no peer fin", func(*shutdown) {}, (*shutdown).ackOut},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var s shutdown
			tt.setup(&s)
			before := s
			if tt.event(&s) {
				t.Fatalf("allowed from %+v", before)
			}
			if s != before {
				t.Fatalf("changed %+v to %+v", before, s)
			}
		})
	}
}

func (s shutdown) String() string {
	return fmt.Sprintf("{closed %v fin %d close %d peer %d ack %d}", s.closed, s.fin, s.close, s.peer, s.ack)
}
