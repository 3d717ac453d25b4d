package tcp

import (
	"errors"
	"time"
)

// A passive link whose peer agreed no ready-to-receive frame (Linux siw
// with its peer_to_peer parameter off, as it ships; MPA revision 1 peers)
// may have to speak first: perftest's write_lat server writes first, and
// so does any application whose server greets its client. RFC 5044 has the
// responder wait for the initiator's first FPDU, which such an
// application's initiator never sends; siw's own responder does not wait,
// and siw's initiator takes FPDUs that follow the MPA reply. It does not
// take one that arrives with the reply: it reads the reply's private data
// asking for 4 bytes more (siw_recv_mpa_rr) and ends the connection if any
// came.
//
// So the link's frames wait (phaseAwaitFirst) until the first of:
//   - the peer's first FPDU arrived (firstInbound): the peer is past its
//     handshake;
//   - the peer's TCP acknowledged every byte the link wrote, the reply
//     included, and replySettle has passed since it was seen: the reply is
//     in the peer's kernel, whose arrival callback has queued the work
//     that reads it, and that work ran;
//   - replyBlind has passed since the reply was written, where the socket
//     does not tell what the peer acknowledged (sentUnacked reports
//     errUnackedUnknown).
//
// The acknowledgement is polled after replyPollFirst, then at doubling
// intervals up to replyPollMax; only a link in this state polls.
var (
	replyPollFirst = time.Millisecond
	replyPollMax   = 64 * time.Millisecond
	replySettle    = 5 * time.Millisecond
	replyBlind     = 100 * time.Millisecond
)

// armReplyDeliveryLocked starts watching for the reply's delivery after it
// was written. l.mu held.
func (l *link) armReplyDeliveryLocked() {
	written := time.Now()
	delay, pollMax, settle, blind := replyPollFirst, replyPollMax, replySettle, replyBlind
	unacked := l.unacked
	if s := l.seams; s != nil {
		unacked = func() (int, error) {
			if n, err, ok := s.unacked(); ok {
				return n, err
			}
			return l.unacked()
		}
	}
	var acked time.Time // when the peer was seen to have acknowledged all
	check := func() {
		l.mu.Lock()
		held := l.phase == phaseAwaitFirst
		l.mu.Unlock()
		if !held {
			return
		}
		now := time.Now()
		if acked.IsZero() {
			n, err := unacked()
			switch {
			case err == nil && n == 0:
				acked = now
			case errors.Is(err, errUnackedUnknown) && now.Sub(written) >= blind:
				l.releaseHold()
				return
			}
		}
		next := min(delay*2, pollMax)
		if !acked.IsZero() {
			next = settle - now.Sub(acked)
			if next <= 0 {
				l.releaseHold()
				return
			}
		}
		delay = next
		l.mu.Lock()
		if l.phase == phaseAwaitFirst {
			l.replyTimer.Reset(next)
		}
		l.mu.Unlock()
	}
	l.replyTimer = time.AfterFunc(delay, check)
}

// unacked returns the bytes written on the link's socket that the peer has
// not acknowledged.
func (l *link) unacked() (int, error) {
	raw, err := l.conn.SyscallConn()
	if err != nil {
		return 0, errUnackedUnknown
	}
	n, uerr := 0, errUnackedUnknown
	if err := raw.Control(func(fd uintptr) { n, uerr = sentUnacked(fd) }); err != nil {
		return 0, err
	}
	return n, uerr
}

// releaseHold lets the link's frames leave before the peer's first FPDU.
func (l *link) releaseHold() {
	l.mu.Lock()
	held := l.phase == phaseAwaitFirst && l.phase.to(phaseRunning)
	l.mu.Unlock()
	if held {
		l.wakeWriter()
	}
}

// errUnackedUnknown: the socket does not tell what the peer acknowledged.
var errUnackedUnknown = errors.New("tcp: the socket does not report unacknowledged bytes")
