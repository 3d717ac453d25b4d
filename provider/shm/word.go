//go:build linux || windows || darwin || freebsd

package shm

import "sync/atomic"

// Word access is shmring's (Word64, Load64, ...), sequentially consistent
// as the seqlock and in-flight protocol needs (the target's "store seq,
// load inflight" against the initiator's "raise inflight, load seq").
// The words come from shmring.Word64 and Word32, which check the offset
// against the slice's length and the address for natural alignment; they
// only ever hold integers, and every value read from them is treated as
// untrusted (the peer may store anything at any time).
func add32(p *uint32, d int32) uint32 {
	return atomic.AddUint32(p, uint32(d))
}
