//go:build windows && (amd64 || arm64) && !race

package ndspi_test

const raceEnabled = false
