//go:build race

package datapath

// LoadWord returns *p for LoadByte, out of the race detector's sight.
//
// The detector counts an atomic load as an access like any other, and the
// provider's plain write of the polled byte, from another goroutine (a copy,
// or a read from a socket into place), is ordered before it only by what the
// detector cannot see: in-order placement, and for the tcp provider the
// kernel. It would report a race on every round trip of nd rdmapingpong, so
// under -race the word is read uninstrumented. go:norace functions are not
// inlined in race builds, so every call loads the word afresh, and an
// aligned 4-byte load is atomic on every platform Go supports.
//
//go:norace
func LoadWord(p *uint32) uint32 { return *p }

// RaceBuild reports whether the race detector is on.
const RaceBuild = true

// StoreWord sets *p for resetCredit, out of the race detector's sight like
// LoadWord: the peer's RDMA Writes of the word are ordered before it only by
// the control connection's handshake, which the detector cannot see.
//
//go:norace
func StoreWord(p *uint32, v uint32) { *p = v }
