package ndnet

// shutdown is a connection's shutdown, both ways: what this side's
// application called (CloseWrite, Close), which of this side's shutdown
// frames are due or out, and how far the peer's shutdown went. Each field
// is a small state of its own; the methods below are the only transitions,
// and each refuses (false) one the protocol does not allow from the
// current state. Under Conn.mu.
//
// This side's stream: finNone → finDue (CloseWrite or Close) → finSent
// (the fin frame is out) → finAcked (the peer's finAck came). A fin sent
// by Close carries flagClosed; Close after CloseWrite sends a close frame
// instead, once the fin is out: closeNone → closeDue → closeSent.
// The peer's: peerOpen → peerFinished (its fin: it writes no more) →
// peerClosed (its fin carried flagClosed, or its close came: it reads no
// more either); each fin of the peer's is acknowledged: ackNone → ackDue
// → ackSent.
type shutdown struct {
	closed bool // Close was called
	fin    finState
	close  closeState
	peer   peerState
	ack    ackState
}

type finState uint8

const (
	finNone  finState = iota // this side's stream is open
	finDue                   // CloseWrite or Close: the fin waits for room
	finSent                  // the fin is out
	finAcked                 // the peer acknowledged it
)

type closeState uint8

const (
	closeNone closeState = iota // no close frame is owed (none, or the fin carried flagClosed)
	closeDue                    // Close after CloseWrite: the close frame waits for the fin and room
	closeSent                   // the close frame is out
)

type peerState uint8

const (
	peerOpen     peerState = iota // the peer's stream is open
	peerFinished                  // the peer's fin came: it writes no more
	peerClosed                    // the peer closed: it reads no more either
)

type ackState uint8

const (
	ackNone ackState = iota // no fin of the peer's to acknowledge
	ackDue                  // its fin came: the finAck waits for room
	ackSent                 // the finAck is out
)

// closeWrite is CloseWrite: it reports false once Close was called;
// after an earlier CloseWrite it changes nothing.
func (s *shutdown) closeWrite() bool {
	if s.closed {
		return false
	}
	if s.fin == finNone {
		s.fin = finDue
	}
	return true
}

// closeConn is Close: it reports false if Close was called before. The fin
// is due with flagClosed, or, after CloseWrite, the close frame.
func (s *shutdown) closeConn() bool {
	if s.closed {
		return false
	}
	s.closed = true
	if s.fin == finNone {
		s.fin = finDue // with flagClosed (finFlags): no close frame is owed
		return true
	}
	s.close = closeDue
	return true
}

// finFlags are the flags of this side's fin frame.
func (s *shutdown) finFlags() uint8 {
	if s.closed && s.close == closeNone {
		return flagClosed
	}
	return 0
}

// writeShut reports whether this side's stream is ended (CloseWrite or
// Close): Writes fail.
func (s *shutdown) writeShut() bool { return s.fin != finNone }

// sendFin, sendClose and sendAck report whether that frame is due now.
func (s *shutdown) sendFin() bool   { return s.fin == finDue }
func (s *shutdown) sendClose() bool { return s.close == closeDue && s.fin >= finSent }
func (s *shutdown) sendAck() bool   { return s.ack == ackDue }

// finOut, closeOut and ackOut record that the due frame is out.
func (s *shutdown) finOut() bool {
	if s.fin != finDue {
		return false
	}
	s.fin = finSent
	return true
}

func (s *shutdown) closeOut() bool {
	if !s.sendClose() {
		return false
	}
	s.close = closeSent
	return true
}

func (s *shutdown) ackOut() bool {
	if s.ack != ackDue {
		return false
	}
	s.ack = ackSent
	return true
}

// peerFin is the peer's fin frame (closed: it carried flagClosed); false
// for a second fin.
func (s *shutdown) peerFin(closed bool) bool {
	if s.peer != peerOpen {
		return false
	}
	s.peer, s.ack = peerFinished, ackDue
	if closed {
		s.peer = peerClosed
	}
	return true
}

// peerClose is the peer's close frame: false unless its fin came without
// flagClosed before.
func (s *shutdown) peerClose() bool {
	if s.peer != peerFinished {
		return false
	}
	s.peer = peerClosed
	return true
}

// peerFinAck is the peer's acknowledgment of this side's fin: false unless
// that fin is out and was not acknowledged yet.
func (s *shutdown) peerFinAck() bool {
	if s.fin != finSent {
		return false
	}
	s.fin = finAcked
	return true
}

// closeDone reports whether Close has nothing more to wait for: the peer
// acknowledged the fin and the close frame, if one is owed, is out.
func (s *shutdown) closeDone() bool {
	return s.fin == finAcked && s.close != closeDue
}
