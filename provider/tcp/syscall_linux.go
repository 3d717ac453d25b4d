package tcp

import (
	"syscall"
	"unsafe"
)

// rawIO: the descriptor can be read and written without blocking.
const rawIO = true

// readNonblocking reads from the socket's (non-blocking) descriptor once.
func readNonblocking(fd uintptr, b []byte) (int, error) {
	if len(b) == 0 || len(b) >= rawMax {
		return syscall.Read(int(fd), b)
	}
	return rawCall(syscall.SYS_READ, fd, b, 0)
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

// readvBuffers is readTwo's two places, as readv(2) takes them.
type readvBuffers [2]syscall.Iovec

func (v *readvBuffers) set(p, q []byte) {
	v[0].Base, v[1].Base = &p[0], &q[0]
	v[0].SetLen(len(p))
	v[1].SetLen(len(q))
}

// clear drops the references to the last call's buffers.
func (v *readvBuffers) clear() { *v = readvBuffers{} }

// readvNonblocking reads from the socket's (non-blocking) descriptor once
// into v's two buffers, through RawSyscall unless they total rawMax or
// more (readNonblocking's rule). The Iovecs hold their buffers through
// Base pointers, which keep the memory alive; v's address appears in the
// call expression, converted there (unsafe.Pointer rule 4).
func readvNonblocking(fd uintptr, v *readvBuffers) (int, error) {
	var n uintptr
	var e syscall.Errno
	if v[0].Len+v[1].Len >= rawMax {
		n, _, e = syscall.Syscall(syscall.SYS_READV, fd, uintptr(unsafe.Pointer(v)), uintptr(len(v)))
	} else {
		n, _, e = syscall.RawSyscall(syscall.SYS_READV, fd, uintptr(unsafe.Pointer(v)), uintptr(len(v)))
	}
	if e != 0 {
		return -1, e
	}
	return int(n), nil
}
