//go:build !race

package shmring

func raceRelease() {}
func raceAcquire() {}

// storeUnordered stores a header word that a later Publish makes visible:
// a plain store, which Publish's atomic store (a full barrier) orders
// before the record it publishes. Without a barrier of its own it does not
// make the producer wait for the line the consumer polls, again and again,
// while it fills one publication.
func storeUnordered(p *uint64, v uint64) { *p = v }
