//go:build !race

package main

import "sync/atomic"

// loadWord returns *p for loadByte; see loadByte and spin_race.go.
func loadWord(p *uint32) uint32 { return atomic.LoadUint32(p) }

// raceBuild reports whether the race detector is on.
const raceBuild = false

// storeWord sets *p for resetCredit; see loadWord.
func storeWord(p *uint32, v uint32) { atomic.StoreUint32(p, v) }
