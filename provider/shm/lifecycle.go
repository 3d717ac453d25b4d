//go:build linux || windows || darwin || freebsd

package shm

import "sync/atomic"

// linkPhase is where a link is in its life. The phases only move forward:
//
//	phaseSetup → phaseRunning (Attach) → phaseDraining (the peer hung up)
//	any phase but phaseClosed → phaseClosed (shutdown)
type linkPhase uint32

const (
	// phaseSetup: the connection setup runs on the socket; the endpoint
	// is not attached and nobody consumes the ring yet.
	phaseSetup linkPhase = iota
	// phaseRunning: the endpoint is attached and the readiness set
	// consumes the inbound ring; only segment messages may come on the
	// socket.
	phaseRunning
	// phaseDraining: the peer hung up after the setup. The reader
	// delivers what the peer published before it went (a Terminate
	// record among it) and then ends the link.
	phaseDraining
	// phaseClosed: shutdown ran. Nothing more is written to the ring or
	// handed to the engine; cleanup completes what the link still owns.
	phaseClosed
)

// String names the phase, for test failures.
func (p linkPhase) String() string {
	switch p {
	case phaseSetup:
		return "setup"
	case phaseRunning:
		return "running"
	case phaseDraining:
		return "draining"
	case phaseClosed:
		return "closed"
	}
	return "phase?"
}

// lifecycle is a link's phase: one value in place of the flags that said
// started, closing, closed and peer gone. It moves only through to, called
// with the link's mu held, so transitions are serialized with what the
// poster, the writer and the watcher decide under mu; the reader and the
// direct-copy path load it without the lock.
type lifecycle struct{ v atomic.Uint32 }

// phase returns the current phase. Safe without mu.
func (c *lifecycle) phase() linkPhase { return linkPhase(c.v.Load()) }

// closed reports whether shutdown ran. Safe without mu.
func (c *lifecycle) closed() bool { return c.phase() == phaseClosed }

// to moves to next and reports true if that is a legal step from the
// current phase; otherwise it changes nothing and reports false (the link
// was attached twice, the peer's hang-up came after the end, shutdown ran
// before). Called with the link's mu held.
func (c *lifecycle) to(next linkPhase) bool {
	if !legalStep(c.phase(), next) {
		return false
	}
	c.v.Store(uint32(next))
	return true
}

// legalStep reports whether a link may go from phase from to phase to.
func legalStep(from, to linkPhase) bool {
	switch to {
	case phaseRunning:
		return from == phaseSetup
	case phaseDraining:
		return from == phaseRunning
	case phaseClosed:
		return from != phaseClosed
	}
	return false
}
