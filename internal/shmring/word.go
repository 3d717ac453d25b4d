package shmring

import (
	"sync/atomic"
	"unsafe"
)

// This file is the package's only use of unsafe. The ring's indices and
// flags live in a shared mapping (or, in tests, in a Go byte slice) and are
// accessed with sync/atomic, which needs *uint64 and *uint32. word64 and
// word32 turn an aligned offset of such a slice into that pointer. It is
// sound because:
//   - the offset and the slice's length are checked, so the pointer stays
//     inside the slice's memory;
//   - the address is checked for natural alignment, as sync/atomic requires;
//   - a mapping made with mmap is not Go heap memory, so the garbage
//     collector neither moves nor frees it; the caller keeps it mapped for
//     as long as the Ring is used (Go heap slices used in tests are kept
//     alive by the Ring's reference to them, and Go does not move heap
//     objects);
//   - the words only ever hold integers, never pointers.
//
// The peer may store any value in these words at any time; callers treat
// every value read as untrusted and validate it.

// Word64 returns the 8-byte word at offset off of b, which must lie inside
// b and be 8-byte aligned (it panics otherwise), for Load64 and Store64.
// b must be memory the garbage collector does not move (a mapping) or a
// slice kept alive while the word is used; see above.
func Word64(b []byte, off int) *uint64 {
	if off < 0 || off+8 > len(b) {
		panic("shmring: word out of range")
	}
	p := unsafe.Pointer(&b[off])
	if uintptr(p)%8 != 0 {
		panic("shmring: misaligned word")
	}
	return (*uint64)(p)
}

// headerWord returns the record header at index idx of a ring's data
// area. It is sound for the reasons above, and because newRing checked that
// the ring's memory is 8-byte aligned, ControlSize is a multiple of 8, and
// every record index is a multiple of 8: the slice expression checks that
// the word lies inside data, and the word is naturally aligned.
func headerWord(data []byte, idx uint64) *uint64 {
	return (*uint64)(unsafe.Pointer(&data[idx : idx+HeaderSize : idx+HeaderSize][0]))
}

// Word32 is Word64 for a 4-byte word (4-byte aligned).
func Word32(b []byte, off int) *uint32 {
	if off < 0 || off+4 > len(b) {
		panic("shmring: word out of range")
	}
	p := unsafe.Pointer(&b[off])
	if uintptr(p)%4 != 0 {
		panic("shmring: misaligned word")
	}
	return (*uint32)(p)
}

// Load64, Store64, Load32 and Store32 are the accesses to the words,
// sequentially consistent and safe for concurrent use (also by another
// process that maps the same memory); the only other one is the producer's
// storeUnordered of header words that its next Store64 publishes.
//
// The doorbell protocol is a Dekker handshake ("store flag, load header"
// against "store header, load flag"), which needs every store ordered
// before the loads that follow it. A store is therefore an atomic swap: a
// full barrier on every architecture (XCHG on amd64, the same instruction
// a plain atomic store uses there). A plain atomic store would do in
// normal builds, but under the race detector sync/atomic stores are mere
// release stores (a MOV on amd64, no fence), so the consumer's load of a
// header could pass its store of sleeping and a wake-up be lost: both sides
// asleep with a record in the ring.
func Load64(p *uint64) uint64 { return atomic.LoadUint64(p) }

// Store64 stores v at p with a full barrier (see above).
func Store64(p *uint64, v uint64) { atomic.SwapUint64(p, v) }

// Load32 is Load64 for a 4-byte word.
func Load32(p *uint32) uint32 { return atomic.LoadUint32(p) }

// Store32 is Store64 for a 4-byte word.
func Store32(p *uint32, v uint32) { atomic.SwapUint32(p, v) }
