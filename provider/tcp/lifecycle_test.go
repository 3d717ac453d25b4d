package tcp

import "testing"

// TestLinkLifecycle walks every pair of phases: the legal steps are taken,
// every other is refused and leaves the phase as it was.
func TestLinkLifecycle(t *testing.T) {
	phases := []linkPhase{phaseHandshake, phaseAwaitRTR, phaseAwaitFirst, phaseRunning, phaseClosed}
	legal := map[[2]linkPhase]bool{
		{phaseHandshake, phaseAwaitRTR}:   true,
		{phaseHandshake, phaseAwaitFirst}: true,
		{phaseHandshake, phaseRunning}:    true,
		{phaseHandshake, phaseClosed}:     true,
		{phaseAwaitRTR, phaseRunning}:     true,
		{phaseAwaitRTR, phaseClosed}:      true,
		{phaseAwaitFirst, phaseRunning}:   true,
		{phaseAwaitFirst, phaseClosed}:    true,
		{phaseRunning, phaseClosed}:       true,
	}
	for _, from := range phases {
		for _, to := range phases {
			p := from
			got := p.to(to)
			want := legal[[2]linkPhase{from, to}]
			if got != want {
				t.Errorf("%v → %v: to reported %v, want %v", from, to, got, want)
			}
			after := from
			if want {
				after = to
			}
			if p != after {
				t.Errorf("%v → %v: phase %v after, want %v", from, to, p, after)
			}
		}
		if want := from == phaseAwaitRTR || from == phaseAwaitFirst; from.holding() != want {
			t.Errorf("%v: holding() %v, want %v", from, from.holding(), want)
		}
	}
	// The lives a link takes: active, passive with and without a
	// ready-to-receive frame, and one ended in its handshake.
	for _, life := range [][]linkPhase{
		{phaseRunning, phaseClosed},
		{phaseAwaitRTR, phaseRunning, phaseClosed},
		{phaseAwaitFirst, phaseRunning, phaseClosed},
		{phaseClosed},
	} {
		p := phaseHandshake
		for _, step := range life {
			if !p.to(step) {
				t.Fatalf("life %v: step to %v refused from %v", life, step, p)
			}
		}
		if p.to(phaseRunning) || p.to(phaseClosed) {
			t.Fatalf("life %v: a closed link moved on", life)
		}
	}
}
