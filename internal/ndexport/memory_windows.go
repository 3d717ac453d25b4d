//go:build windows

package ndexport

import (
	"unsafe"

	"golang.org/x/sys/windows"
)

// usableMemory reports whether the n bytes at p are committed memory of the
// process that it may read, and write if write is true: a registration of
// other memory is ND_ACCESS_VIOLATION, as a hardware provider's pinning
// fails on it. (What the consumer frees while it is registered is its
// own mistake: nothing here can pin it.)
func usableMemory(p unsafe.Pointer, n uintptr, write bool) bool {
	const readable = windows.PAGE_READONLY | windows.PAGE_READWRITE | windows.PAGE_WRITECOPY |
		windows.PAGE_EXECUTE_READ | windows.PAGE_EXECUTE_READWRITE | windows.PAGE_EXECUTE_WRITECOPY
	const writable = windows.PAGE_READWRITE | windows.PAGE_WRITECOPY | windows.PAGE_EXECUTE_READWRITE | windows.PAGE_EXECUTE_WRITECOPY
	start, end := uintptr(p), uintptr(p)+n
	for a := start; a < end; {
		var mbi windows.MemoryBasicInformation
		if err := windows.VirtualQuery(a, &mbi, unsafe.Sizeof(mbi)); err != nil {
			return false
		}
		prot := mbi.Protect
		if mbi.State != windows.MEM_COMMIT || prot&(windows.PAGE_GUARD|windows.PAGE_NOACCESS) != 0 || prot&readable == 0 ||
			write && prot&writable == 0 {
			return false
		}
		next := mbi.BaseAddress + mbi.RegionSize
		if next <= a {
			return false
		}
		a = next
	}
	return true
}
