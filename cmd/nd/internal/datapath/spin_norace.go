//go:build !race

package datapath

import "sync/atomic"

// LoadWord returns *p for LoadByte; see LoadByte and spin_race.go.
func LoadWord(p *uint32) uint32 { return atomic.LoadUint32(p) }

// RaceBuild reports whether the race detector is on.
const RaceBuild = false

// StoreWord sets *p for resetCredit; see LoadWord.
func StoreWord(p *uint32, v uint32) { atomic.StoreUint32(p, v) }
