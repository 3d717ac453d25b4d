package tcp

// linkPhase is where a link is in its life, under the link's mu. The
// phases only move forward:
//
//	active:  phaseHandshake → phaseRunning (Ready)
//	passive: phaseHandshake → phaseAwaitRTR (the reply is out, peer-to-peer)
//	                          → phaseRunning (the peer's ready-to-receive frame)
//	         phaseHandshake → phaseAwaitFirst (the reply is out, no RTR agreed)
//	                          → phaseRunning (the peer's first FPDU, or the reply's delivery)
//	any phase but phaseClosed → phaseClosed (shutdown)
//
// Two facts that outlive the phase stay beside it, each set once under
// mu: writerStarted (the writer goroutine owns the socket's sending side;
// before it, the handshake and shutdown write directly) and rtrSent (the
// active side's ready-to-receive frame is written, which a close still
// needs to know: rtrBeforeClose).
type linkPhase uint8

const (
	// phaseHandshake: the MPA request and reply are exchanged; no FPDU
	// goes either way.
	phaseHandshake linkPhase = iota
	// phaseAwaitRTR: passive, the reply is out and peer-to-peer mode was
	// agreed: the first inbound FPDU must be the ready-to-receive frame
	// (HandshakeTimeout bounds the wait) and nothing leaves before it.
	phaseAwaitRTR
	// phaseAwaitFirst: passive, the reply is out and the peer sends no
	// ready-to-receive frame (siw): nothing leaves before its first FPDU
	// or the reply's delivery (reply_delivery.go).
	phaseAwaitFirst
	// phaseRunning: frames flow both ways.
	phaseRunning
	// phaseClosed: shutdown ran; the writer sends the Terminate owed and
	// closes the socket, and cleanup completes what the link owns.
	phaseClosed
)

// String names the phase, for test failures.
func (p linkPhase) String() string {
	switch p {
	case phaseHandshake:
		return "handshake"
	case phaseAwaitRTR:
		return "awaitRTR"
	case phaseAwaitFirst:
		return "awaitFirst"
	case phaseRunning:
		return "running"
	case phaseClosed:
		return "closed"
	}
	return "phase?"
}

// holding reports whether the phase holds this side's frames back (the
// passive side before the active side spoke).
func (p linkPhase) holding() bool { return p == phaseAwaitRTR || p == phaseAwaitFirst }

// to moves the phase to next and reports true if that is a legal step;
// otherwise it changes nothing and reports false (a step after shutdown, a
// second Ready, a release of a link that held nothing back). Called with
// the link's mu held.
func (p *linkPhase) to(next linkPhase) bool {
	if !legalStep(*p, next) {
		return false
	}
	*p = next
	return true
}

// legalStep reports whether a link may go from phase from to phase to.
func legalStep(from, to linkPhase) bool {
	switch to {
	case phaseAwaitRTR, phaseAwaitFirst:
		return from == phaseHandshake
	case phaseRunning:
		return from == phaseHandshake || from.holding()
	case phaseClosed:
		return from != phaseClosed
	}
	return false
}
