//go:build !race

package shmring

func raceRelease() {}
func raceAcquire() {}
