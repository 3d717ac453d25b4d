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

// readNonblocking reads from the socket's (non-blocking) descriptor once.
func readNonblocking(fd uintptr, b []byte) (int, error) {
	if len(b) == 0 || len(b) >= rawMax {
		return syscall.Read(int(fd), b)
	}
	return rawCall(syscall.SYS_READ, fd, b, 0)
}

// peekNonblocking looks at the socket's next bytes without taking them.
func peekNonblocking(fd uintptr, b []byte) (int, error) {
	if len(b) == 0 || len(b) >= rawMax {
		n, _, err := syscall.Recvfrom(int(fd), b, syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		return n, err
	}
	return rawCall(syscall.SYS_RECVFROM, fd, b, syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
}

// writeNonblocking writes to the socket's (non-blocking) descriptor once.
func writeNonblocking(fd uintptr, b []byte) (int, error) {
	if len(b) == 0 || len(b) >= rawMax {
		return syscall.Write(int(fd), b)
	}
	return rawCall(syscall.SYS_WRITE, fd, b, 0)
}

// rawCall makes the system call trap(fd, b, len(b), flags) with
// RawSyscall6 and returns it in syscall.Read's form; b is not empty. The
// conversion of &b[0] to uintptr appears in the call expression itself,
// which keeps b's memory alive and in place for the call (unsafe.Pointer
// rule 4). read and write ignore the fourth argument.
func rawCall(trap, fd uintptr, b []byte, flags uintptr) (int, error) {
	n, _, e := syscall.RawSyscall6(trap, fd, uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)), flags, 0, 0)
	if e != 0 {
		return -1, e
	}
	return int(n), nil
}
