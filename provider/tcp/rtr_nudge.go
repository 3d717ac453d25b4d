package tcp

import (
	"time"

	"github.com/godirect/nd/internal/iwarp"
)

// Linux's siw (through 6.1 at least), as an MPA responder in peer-to-peer
// mode, sends its MPA reply and only then installs the socket callback
// that reads the initiator's ready-to-receive frame (siw_accept, then
// siw_sk_assign_rtr_upcalls). An RTR that arrives in between stays unread
// in siw's socket: the callback runs only when more bytes arrive, so siw
// never reports the connection established, its application never
// answers, and an initiator that waits for an answer waits forever
// (docs/iwcm-close-bug.md, "The RTR that siw does not see"). An active link
// facing a foreign peer therefore nudges it: until the first FPDU from
// the peer arrives it sends zero-length RDMA Writes (the Write RTR frame
// of RFC 6581; siw takes one without looking at its STag) after
// rtrNudgeFirst, then at doubling intervals, rtrNudges times in all. Each
// one is new bytes on siw's socket, so its callback runs and reads the RTR
// with everything after it. A peer that sent anything has seen the RTR.
// Only a provider/tcp peer gets none: godirect's verbs provider answers
// through the kernel's or the adapter's iWARP stack (siw in the VM), with
// siw's window.

// rtrNudgeFirst is the wait before the first nudge; rtrNudges is how many
// are sent at most (the last one about 6 s after the RTR).
var (
	rtrNudgeFirst = 100 * time.Millisecond
	rtrNudges     = 6
)

// armRTRNudgeLocked starts the nudges after the writer encoded the RTR for a
// peer whose MPA is not provider/tcp's. l.mu held.
func (l *link) armRTRNudgeLocked() {
	if l.peerExact || l.rtrNudge != nil {
		return
	}
	start := l.framesIn.Load()
	delay, left := rtrNudgeFirst, rtrNudges
	fire := func() {
		l.mu.Lock()
		if l.phase == phaseClosed || l.framesIn.Load() != start || left == 0 {
			l.mu.Unlock()
			return
		}
		left--
		l.addJobLocked(jobRTRNudge)
		delay *= 2
		l.rtrNudge.Reset(delay)
		l.mu.Unlock()
		l.wakeWriter()
	}
	l.rtrNudge = time.AfterFunc(delay, fire)
}

// sendRTRNudge encodes one nudge: a zero-length RDMA Write through the
// STag of the Write RTR.
func (l *link) sendRTRNudge(s *sender) error {
	h := iwarp.SegmentHeader{Opcode: iwarp.OpWrite, Last: true, STag: iwarp.RTRWriteSTag}
	return s.fpdu(&h, nil, 0, 0)
}
