//go:build linux

package shm

import (
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// This file holds the window table's futex, which the target sleeps on
// while an initiator's copy is in flight, the atomic add on the table's
// words, and the readiness set's non-blocking epoll_wait. It and addr.go
// are the package's only uses of unsafe. It is sound
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

// epollWaitNow is epoll_wait with timeout 0 through RawSyscall6: it never
// waits, so it need not hand the processor to the runtime (an application
// polling in a loop makes it often). The pointer is out's first element,
// a Go slice kept alive by the call, and the kernel writes at most len(out)
// events into it.
func epollWaitNow(epfd int, out []unix.EpollEvent) (int, error) {
	if len(out) == 0 {
		return 0, nil
	}
	n, _, e := unix.RawSyscall6(unix.SYS_EPOLL_PWAIT, uintptr(epfd), uintptr(unsafe.Pointer(&out[0])), uintptr(len(out)), 0, 0, 0)
	if e != 0 {
		return 0, e
	}
	return int(n), nil
}
