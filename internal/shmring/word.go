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

func word64(b []byte, off int) *uint64 {
	if off < 0 || off+8 > len(b) {
		panic("shmring: word out of range")
	}
	p := unsafe.Pointer(&b[off])
	if uintptr(p)%8 != 0 {
		panic("shmring: misaligned word")
	}
	return (*uint64)(p)
}

func word32(b []byte, off int) *uint32 {
	if off < 0 || off+4 > len(b) {
		panic("shmring: word out of range")
	}
	p := unsafe.Pointer(&b[off])
	if uintptr(p)%4 != 0 {
		panic("shmring: misaligned word")
	}
	return (*uint32)(p)
}

// load and store are the only accesses to the words.
//
// The doorbell protocol is a Dekker handshake ("store flag, load index"
// against "store index, load flag"), which needs every store ordered
// before the loads that follow it. A store is therefore an atomic swap: a
// full barrier on every architecture (XCHG on amd64, the same instruction
// a plain atomic store uses there). A plain atomic store would do in
// normal builds, but under the race detector sync/atomic stores are mere
// release stores (a MOV on amd64, no fence), so the consumer's load of
// tail could pass its store of sleeping and a wake-up be lost: both sides
// asleep with a record in the ring.
func load64(p *uint64) uint64     { return atomic.LoadUint64(p) }
func store64(p *uint64, v uint64) { atomic.SwapUint64(p, v) }
func load32(p *uint32) uint32     { return atomic.LoadUint32(p) }
func store32(p *uint32, v uint32) { atomic.SwapUint32(p, v) }
