//go:build race

package ndexport

const raceEnabled = true
