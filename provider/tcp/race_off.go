//go:build !race

package tcp

// See race_on.go.
func raceRelease() {}
func raceAcquire() {}
