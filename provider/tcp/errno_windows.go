package tcp

import "golang.org/x/sys/windows"

// The socket errors dialError and Listen tell apart, as Winsock reports
// them (syscall's E* values are not what Windows sockets return).
var (
	errAddrInUse    error = windows.WSAEADDRINUSE
	errAddrNotAvail error = windows.WSAEADDRNOTAVAIL
	errNetUnreach   error = windows.WSAENETUNREACH
	errHostUnreach  error = windows.WSAEHOSTUNREACH
)
