package tcp

import (
	"syscall"
	"unsafe"
)

// spinSupported: the reader may poll the socket with non-blocking reads.
const spinSupported = true

// rawMax: non-blocking reads and writes shorter than this go through
// syscall.RawSyscall, longer ones through syscall.Syscall.
//
// syscall.Syscall tells the runtime that the goroutine is in a system
// call. In a process confined to one core, while a goroutine makes such
// calls back to back (a poll loop), the runtime's monitor thread finds
// the processor "in a system call" at its periodic look, takes it away and
// starts another thread to run it; the caller then has to win it back when
// its call returns. Each of those steps is a context switch on the one
// core: a loop of getppid calls measured 1.6 us per call with Syscall and
// 1.0 us with RawSyscall (about 5000 monitor wake-ups a second against
// 130). A call on a non-blocking descriptor never waits, and one that
// copies less than rawMax bytes is over in microseconds, so holding the
// processor through it costs nobody anything. A long copy (rawMax bytes
// or more) still goes through Syscall, so that the runtime may run other
// goroutines on another thread while the kernel copies.
const rawMax = longRead

// The conversions of &b[0] to uintptr appear in the RawSyscall call
// expressions themselves, which keeps b's memory alive and in place for
// the call (unsafe.Pointer rule 4); b is never empty there.

// readNonblocking reads from the socket's (non-blocking) descriptor once.
func readNonblocking(fd uintptr, b []byte) (int, error) {
	if len(b) == 0 || len(b) >= rawMax {
		return syscall.Read(int(fd), b)
	}
	n, _, e := syscall.RawSyscall(syscall.SYS_READ, fd, uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)))
	return result(n, e)
}

// peekNonblocking looks at the socket's next bytes without taking them.
func peekNonblocking(fd uintptr, b []byte) (int, error) {
	if len(b) == 0 || len(b) >= rawMax {
		n, _, err := syscall.Recvfrom(int(fd), b, syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		return n, err
	}
	n, _, e := syscall.RawSyscall6(syscall.SYS_RECVFROM, fd, uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)),
		syscall.MSG_PEEK|syscall.MSG_DONTWAIT, 0, 0)
	return result(n, e)
}

// writeNonblocking writes to the socket's (non-blocking) descriptor once.
func writeNonblocking(fd uintptr, b []byte) (int, error) {
	if len(b) == 0 || len(b) >= rawMax {
		return syscall.Write(int(fd), b)
	}
	n, _, e := syscall.RawSyscall(syscall.SYS_WRITE, fd, uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)))
	return result(n, e)
}

// result turns a raw call's return into syscall.Read's form.
func result(n uintptr, e syscall.Errno) (int, error) {
	if e != 0 {
		return -1, e
	}
	return int(n), nil
}
