// Package phasetest checks a lifecycle type (a small set of named phases
// with a function that takes one step and refuses illegal ones) against
// the table of its legal steps, for the transports' tests.
package phasetest

import (
	"fmt"
	"testing"
)

// Walk tries every step between two of phases: step(from, to) starts from
// a fresh value in phase from, asks it to move to to, and returns what the
// move reported and the phase after it. A step in legal must be taken and
// leave the value in to; any other must be refused and leave it in from.
// It reports each mismatch as a test error naming both phases.
func Walk[P comparable](t testing.TB, phases []P, legal [][2]P, step func(from, to P) (ok bool, after P)) {
	t.Helper()
	allowed := make(map[[2]P]bool, len(legal))
	for _, s := range legal {
		allowed[s] = true
	}
	for _, from := range phases {
		for _, to := range phases {
			ok, after := step(from, to)
			want := allowed[[2]P{from, to}]
			if ok != want {
				t.Errorf("%v → %v: reported %v, want %v", from, to, ok, want)
			}
			wantAfter := from
			if want {
				wantAfter = to
			}
			if after != wantAfter {
				t.Errorf("%v → %v: phase %v after, want %v", from, to, after, wantAfter)
			}
		}
	}
}

// Lives takes each life in lives, a sequence of steps from start, on a
// fresh value (move takes one step from the value's current phase and
// reports whether it was taken), and checks that every step is taken and
// that no step at all is taken from the last phase of each life, which
// must be final.
func Lives[P comparable](t testing.TB, start P, lives [][]P, phases []P, move func(cur *P, to P) bool) {
	t.Helper()
	for _, life := range lives {
		cur := start
		for _, to := range life {
			if !move(&cur, to) {
				t.Fatalf("life %v: step to %v refused from %v", life, to, cur)
			}
		}
		for _, to := range phases {
			c := cur
			if move(&c, to) {
				t.Errorf("life %v: the final phase %v moved on to %v", life, cur, fmt.Sprint(to))
			}
		}
	}
}
