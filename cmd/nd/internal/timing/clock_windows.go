package timing

import (
	"syscall"
	"unsafe"

	"golang.org/x/sys/windows"
)

// The performance counter, read through kernel32 (QueryPerformanceCounter
// and QueryPerformanceFrequency always succeed since Windows XP).
var (
	qpc      = windows.NewLazySystemDLL("kernel32.dll").NewProc("QueryPerformanceCounter")
	qpcFreq  = queryFrequency()
	qpcStart = queryCounter()
)

func queryFrequency() int64 {
	var f int64
	windows.NewLazySystemDLL("kernel32.dll").NewProc("QueryPerformanceFrequency").Call(uintptr(unsafe.Pointer(&f)))
	if f <= 0 {
		f = 1
	}
	return f
}

// queryCounter returns QueryPerformanceCounter's count. The counter is
// written through a pointer to a local for the length of the call only
// (the soundness of the conversion is syscall's: the pointer is converted
// in the call expression).
func queryCounter() int64 {
	var c int64
	syscall.SyscallN(qpc.Addr(), uintptr(unsafe.Pointer(&c)))
	return c
}

// Now reads the performance counter, in nanoseconds since the process
// started.
func Now() Instant {
	c := queryCounter() - qpcStart
	return Instant(c/qpcFreq*1e9 + c%qpcFreq*1e9/qpcFreq)
}
