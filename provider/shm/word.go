package shm

import (
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// This file holds the window table's atomic words (see wtable.go) and the
// futex the target sleeps on while an initiator's copy is in flight. It and
// addr.go are the package's only uses of unsafe. It is sound because:
//   - word64 and word32 check the offset against the slice's length and the
//     address for natural alignment, so the pointer stays inside the slice
//     and is valid for sync/atomic;
//   - the slices are the connection's shared segment, an mmap'd region that
//     the garbage collector neither moves nor frees; the link keeps it
//     mapped while any caller can use a word (cleanup waits for them);
//   - the words only ever hold integers, never pointers, and every value
//     read from them is treated as untrusted (the peer may store anything
//     at any time);
//   - futex(2) is given the address of such a word only; FUTEX_WAIT reads
//     it and compares, FUTEX_WAKE does not touch it.

func word64(b []byte, off int) *uint64 {
	if off < 0 || off+8 > len(b) {
		panic("shm: word out of range")
	}
	p := unsafe.Pointer(&b[off])
	if uintptr(p)%8 != 0 {
		panic("shm: misaligned word")
	}
	return (*uint64)(p)
}

func word32(b []byte, off int) *uint32 {
	if off < 0 || off+4 > len(b) {
		panic("shm: word out of range")
	}
	p := unsafe.Pointer(&b[off])
	if uintptr(p)%4 != 0 {
		panic("shm: misaligned word")
	}
	return (*uint32)(p)
}

// Sequentially consistent, as the seqlock and in-flight protocol needs
// (the target's "store seq, load inflight" against the initiator's "raise
// inflight, load seq"). Stores are atomic swaps, full barriers everywhere:
// under the race detector sync/atomic stores are only release stores, which
// a later load may pass (see internal/shmring's word.go).
func load64(p *uint64) uint64     { return atomic.LoadUint64(p) }
func store64(p *uint64, v uint64) { atomic.SwapUint64(p, v) }
func load32(p *uint32) uint32     { return atomic.LoadUint32(p) }
func store32(p *uint32, v uint32) { atomic.SwapUint32(p, v) }
func add32(p *uint32, d int32) uint32 {
	return atomic.AddUint32(p, uint32(d))
}

// Shared (not private) futex operations: the word is in a MAP_SHARED
// mapping that another process maps too; the kernel keys the futex by the
// file and offset.
const (
	futexWait = 0
	futexWake = 1
)

// futexSleep blocks while *p == v, at most d (or until woken; spurious
// returns are allowed, the caller checks again).
func futexSleep(p *uint32, v uint32, d time.Duration) {
	if d <= 0 {
		return
	}
	ts := unix.NsecToTimespec(int64(d))
	unix.Syscall6(unix.SYS_FUTEX, uintptr(unsafe.Pointer(p)), futexWait, uintptr(v), uintptr(unsafe.Pointer(&ts)), 0, 0)
}

// futexWakeAll wakes every sleeper on p.
func futexWakeAll(p *uint32) {
	unix.Syscall6(unix.SYS_FUTEX, uintptr(unsafe.Pointer(p)), futexWake, uintptr(1<<31-1), 0, 0, 0)
}
