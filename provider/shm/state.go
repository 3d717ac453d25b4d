//go:build linux || windows || darwin || freebsd

package shm

import "sync/atomic"

// linkState is where a link is in its life. It only moves forward, along
// the transitions linkTransitions allows:
//
//	linkSetup ──> linkAttached ──> linkPeerGone
//	    │              │                │
//	    └──────────────┴──> linkClosing <┘ ──> linkDetached
type linkState uint32

const (
	// linkSetup: the link exists and its watcher reads the setup
	// messages; no endpoint is attached, nothing is in the rings.
	linkSetup linkState = iota
	// linkAttached: the endpoint is attached (Attach) and the link is in
	// the provider's readiness set, whose pollers consume its ring.
	linkAttached
	// linkPeerGone: the socket hung up after Attach. The pollers drain
	// what the peer published before it went, then end the link.
	linkPeerGone
	// linkClosing: shutdown ran. The socket is closed, the watcher and the
	// writer stop, the pollers handle no more records, and cleanup runs.
	linkClosing
	// linkDetached: cleanup took the link out of the readiness set and
	// abandoned its inbound ring: nobody may touch the ring any more (the
	// segment is about to be unmapped).
	linkDetached
	numLinkStates
)

var linkStateNames = [numLinkStates]string{"setup", "attached", "peer-gone", "closing", "detached"}

func (s linkState) String() string {
	if s < numLinkStates {
		return linkStateNames[s]
	}
	return "invalid"
}

// linkTransitions[from][to] is true for the legal transitions, and only
// for them: lifecycle.to checks every change against it.
var linkTransitions = [numLinkStates][numLinkStates]bool{
	linkSetup:    {linkAttached: true, linkClosing: true},
	linkAttached: {linkPeerGone: true, linkClosing: true},
	linkPeerGone: {linkClosing: true},
	linkClosing:  {linkDetached: true},
}

// lifecycle holds a link's linkState. It is read without a lock by the
// link's pollers, the caller of Transmit and the window table; it changes
// only through to, whose callers hold the lock the new state is ordered
// with (link.mu for Attach, the hang-up and shutdown; link.rxMu for
// cleanup's detaching).
type lifecycle struct {
	v atomic.Uint32
}

// load returns the current state.
func (c *lifecycle) load() linkState { return linkState(c.v.Load()) }

// ended reports whether shutdown ran (linkClosing or later).
func (c *lifecycle) ended() bool { return c.load() >= linkClosing }

// to moves the state to next if that is a legal transition from the
// current state, and reports whether it did. A false return leaves the
// state as it was: the change was already made (a second shutdown), or
// overtaken (a hang-up after shutdown).
func (c *lifecycle) to(next linkState) bool {
	for {
		cur := c.v.Load()
		if linkState(cur) >= numLinkStates || next >= numLinkStates || !linkTransitions[cur][next] {
			return false
		}
		if c.v.CompareAndSwap(cur, uint32(next)) {
			return true
		}
	}
}
