//go:build !windows

package tcp

import "syscall"

// The socket errors dialError, Listen and exhausted tell apart.
var (
	errAddrInUse    error = syscall.EADDRINUSE
	errAddrNotAvail error = syscall.EADDRNOTAVAIL
	errNetUnreach   error = syscall.ENETUNREACH
	errHostUnreach  error = syscall.EHOSTUNREACH
	errProcFiles    error = syscall.EMFILE
	errSysFiles     error = syscall.ENFILE
	errNoBufs       error = syscall.ENOBUFS
	errNoMem        error = syscall.ENOMEM
)
