package tcp

import "golang.org/x/sys/windows"

// The socket errors dialError, Listen and exhausted tell apart, as Winsock reports
// them (syscall's E* values are not what Windows sockets return).
var (
	errAddrInUse    error = windows.WSAEADDRINUSE
	errAddrNotAvail error = windows.WSAEADDRNOTAVAIL
	errNetUnreach   error = windows.WSAENETUNREACH
	errHostUnreach  error = windows.WSAEHOSTUNREACH
	errProcFiles    error = windows.WSAEMFILE
	errSysFiles     error = windows.WSAEMFILE // Winsock has one error for both
	errNoBufs       error = windows.WSAENOBUFS
	errNoMem        error = windows.ERROR_NOT_ENOUGH_MEMORY
)
