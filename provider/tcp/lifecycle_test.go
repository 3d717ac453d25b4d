package tcp

import (
	"testing"

	"github.com/godirect/nd/internal/phasetest"
)

var linkPhases = []linkPhase{phaseHandshake, phaseAwaitRTR, phaseAwaitFirst, phaseRunning, phaseClosed}

// TestLinkLifecycle walks every pair of phases: the legal steps are taken,
// every other is refused and leaves the phase as it was; and it takes the
// lives a link has (active, passive with and without a ready-to-receive
// frame, one ended in its handshake) to their closed end.
func TestLinkLifecycle(t *testing.T) {
	phasetest.Walk(t, linkPhases, [][2]linkPhase{
		{phaseHandshake, phaseAwaitRTR},
		{phaseHandshake, phaseAwaitFirst},
		{phaseHandshake, phaseRunning},
		{phaseHandshake, phaseClosed},
		{phaseAwaitRTR, phaseRunning},
		{phaseAwaitRTR, phaseClosed},
		{phaseAwaitFirst, phaseRunning},
		{phaseAwaitFirst, phaseClosed},
		{phaseRunning, phaseClosed},
	}, func(from, to linkPhase) (bool, linkPhase) {
		p := from
		ok := p.to(to)
		return ok, p
	})
	phasetest.Lives(t, phaseHandshake, [][]linkPhase{
		{phaseRunning, phaseClosed},
		{phaseAwaitRTR, phaseRunning, phaseClosed},
		{phaseAwaitFirst, phaseRunning, phaseClosed},
		{phaseClosed},
	}, linkPhases, func(cur *linkPhase, to linkPhase) bool { return cur.to(to) })
	for _, p := range linkPhases {
		if want := p == phaseAwaitRTR || p == phaseAwaitFirst; p.holding() != want {
			t.Errorf("%v: holding() %v, want %v", p, p.holding(), want)
		}
	}
}
