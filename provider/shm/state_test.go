//go:build linux || windows || darwin || freebsd

package shm

import (
	"sync"
	"testing"
)

// TestLinkStateTransitions walks every pair of states: the legal
// transitions (and only they) move the state, and a rejected one leaves
// it where it was.
func TestLinkStateTransitions(t *testing.T) {
	legal := map[[2]linkState]bool{
		{linkSetup, linkAttached}:    true,
		{linkSetup, linkClosing}:     true,
		{linkAttached, linkPeerGone}: true,
		{linkAttached, linkClosing}:  true,
		{linkPeerGone, linkClosing}:  true,
		{linkClosing, linkDetached}:  true,
	}
	for from := range numLinkStates {
		for to := range numLinkStates + 1 { // one past the end: invalid
			var c lifecycle
			c.v.Store(uint32(from))
			want := legal[[2]linkState{from, to}]
			if got := c.to(to); got != want {
				t.Errorf("%v -> %v: to reported %v, want %v", from, to, got, want)
			}
			after := from
			if want {
				after = to
			}
			if got := c.load(); got != after {
				t.Errorf("%v -> %v: state %v after, want %v", from, to, got, after)
			}
			if got, wantEnded := c.ended(), after >= linkClosing; got != wantEnded {
				t.Errorf("%v: ended %v, want %v", after, got, wantEnded)
			}
		}
	}
	var c lifecycle
	c.v.Store(uint32(numLinkStates))
	if c.to(linkClosing) {
		t.Error("an invalid state moved to closing")
	}
}

// TestLinkStateLives runs the lives a link can have, start to end, and
// checks that every state is reached by one of them.
func TestLinkStateLives(t *testing.T) {
	lives := [][]linkState{
		{linkClosing, linkDetached},                             // refused or failed during the setup
		{linkAttached, linkClosing, linkDetached},               // closed by the engine or a failure
		{linkAttached, linkPeerGone, linkClosing, linkDetached}, // the peer hung up
	}
	seen := map[linkState]bool{linkSetup: true}
	for _, life := range lives {
		var c lifecycle
		for _, s := range life {
			if !c.to(s) {
				t.Fatalf("life %v: %v -> %v rejected", life, c.load(), s)
			}
			seen[s] = true
		}
		if c.to(linkClosing) {
			t.Errorf("life %v: a second shutdown moved the state", life)
		}
	}
	for s := range numLinkStates {
		if !seen[s] {
			t.Errorf("state %v is reached by no life", s)
		}
	}
}

// TestLinkStateShutdownOnce races shutdowns and a hang-up on one attached
// link: exactly one shutdown wins, as shutdownTerm relies on.
func TestLinkStateShutdownOnce(t *testing.T) {
	for range 100 {
		var c lifecycle
		c.to(linkAttached)
		var wg sync.WaitGroup
		var mu sync.Mutex
		wins := 0
		for i := range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if i == 0 {
					c.to(linkPeerGone)
					return
				}
				if c.to(linkClosing) {
					mu.Lock()
					wins++
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		if wins != 1 || c.load() != linkClosing {
			t.Fatalf("%d shutdowns won, state %v", wins, c.load())
		}
	}
}
