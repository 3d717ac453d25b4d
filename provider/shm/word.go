//go:build linux

package shm

import (
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// This file holds the window table's futex, which the target sleeps on
// while an initiator's copy is in flight, and the atomic add on the table's
// words. It and addr.go are the package's only uses of unsafe. It is sound
// because:
//   - the words come from shmring.Word64 and Word32, which check the
//     offset against the slice's length and the address for natural
//     alignment;
//   - the slices are the connection's shared segment, an mmap'd region that
//     the garbage collector neither moves nor frees; the link keeps it
//     mapped while any caller can use a word (cleanup waits for them);
//   - the words only ever hold integers, never pointers, and every value
//     read from them is treated as untrusted (the peer may store anything
//     at any time);
//   - futex(2) is given the address of such a word only; FUTEX_WAIT reads
//     it and compares, FUTEX_WAKE does not touch it.

// Word access is shmring's (Word64, Load64, ...), sequentially consistent
// as the seqlock and in-flight protocol needs (the target's "store seq,
// load inflight" against the initiator's "raise inflight, load seq").
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
