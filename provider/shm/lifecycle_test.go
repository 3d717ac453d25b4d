//go:build linux || windows || darwin || freebsd

package shm

import "testing"

// TestLinkLifecycle walks every pair of phases: the legal steps are taken,
// every other is refused and leaves the phase as it was.
func TestLinkLifecycle(t *testing.T) {
	phases := []linkPhase{phaseSetup, phaseRunning, phaseDraining, phaseClosed}
	legal := map[[2]linkPhase]bool{
		{phaseSetup, phaseRunning}:    true,
		{phaseSetup, phaseClosed}:     true,
		{phaseRunning, phaseDraining}: true,
		{phaseRunning, phaseClosed}:   true,
		{phaseDraining, phaseClosed}:  true,
	}
	for _, from := range phases {
		for _, to := range phases {
			var c lifecycle
			c.v.Store(uint32(from))
			got := c.to(to)
			want := legal[[2]linkPhase{from, to}]
			if got != want {
				t.Errorf("%v → %v: to reported %v, want %v", from, to, got, want)
			}
			after := from
			if want {
				after = to
			}
			if c.phase() != after {
				t.Errorf("%v → %v: phase %v after, want %v", from, to, c.phase(), after)
			}
			if c.closed() != (after == phaseClosed) {
				t.Errorf("%v → %v: closed() %v in phase %v", from, to, c.closed(), after)
			}
		}
	}
	// A link's whole life, as Attach, the watcher and shutdown take it.
	var c lifecycle
	for _, step := range []linkPhase{phaseRunning, phaseDraining, phaseClosed} {
		if !c.to(step) {
			t.Fatalf("step to %v refused from %v", step, c.phase())
		}
	}
	if c.to(phaseRunning) || c.to(phaseClosed) {
		t.Fatalf("a closed link moved on")
	}
}
