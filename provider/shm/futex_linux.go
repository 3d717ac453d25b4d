//go:build linux && !shmportable

package shm

import (
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The window table's futex, which the target sleeps on while an
// initiator's copy is in flight. The use of unsafe is sound because
// futex(2) is given the address of a word of the connection's shared
// segment only (from shmring.Word32, checked for bounds and alignment, in
// an mmap'd region the link keeps mapped while any caller can use a word);
// FUTEX_WAIT reads it and compares, FUTEX_WAKE does not touch it.

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
