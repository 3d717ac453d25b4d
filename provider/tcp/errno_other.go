//go:build !windows

package tcp

import "syscall"

// The socket errors dialError and Listen tell apart.
var (
	errAddrInUse    error = syscall.EADDRINUSE
	errAddrNotAvail error = syscall.EADDRNOTAVAIL
	errNetUnreach   error = syscall.ENETUNREACH
	errHostUnreach  error = syscall.EHOSTUNREACH
)
