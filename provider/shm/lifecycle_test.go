//go:build linux || windows || darwin || freebsd

package shm

import (
	"testing"

	"github.com/godirect/nd/internal/phasetest"
)

var linkPhases = []linkPhase{phaseSetup, phaseRunning, phaseDraining, phaseClosed}

// TestLinkLifecycle walks every pair of phases: the legal steps are taken,
// every other is refused and leaves the phase as it was (closed() says
// whether it is phaseClosed); and it takes a link's life, as Attach, the
// watcher and shutdown take it, to its closed end.
func TestLinkLifecycle(t *testing.T) {
	phasetest.Walk(t, linkPhases, [][2]linkPhase{
		{phaseSetup, phaseRunning},
		{phaseSetup, phaseClosed},
		{phaseRunning, phaseDraining},
		{phaseRunning, phaseClosed},
		{phaseDraining, phaseClosed},
	}, func(from, to linkPhase) (bool, linkPhase) {
		var c lifecycle
		c.v.Store(uint32(from))
		ok := c.to(to)
		if c.closed() != (c.phase() == phaseClosed) {
			t.Errorf("%v → %v: closed() %v in phase %v", from, to, c.closed(), c.phase())
		}
		return ok, c.phase()
	})
	phasetest.Lives(t, phaseSetup, [][]linkPhase{
		{phaseRunning, phaseDraining, phaseClosed},
		{phaseRunning, phaseClosed},
		{phaseClosed},
	}, linkPhases, func(cur *linkPhase, to linkPhase) bool {
		var c lifecycle
		c.v.Store(uint32(*cur))
		ok := c.to(to)
		*cur = c.phase()
		return ok
	})
}
