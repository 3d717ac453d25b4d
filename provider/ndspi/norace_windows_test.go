//go:build windows && !race

package ndspi_test

const raceEnabled = false
