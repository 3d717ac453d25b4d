//go:build !race

package shm_test

const raceEnabled = false
