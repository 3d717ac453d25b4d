package winipc

import "unsafe"

// This file holds the package's uses of unsafe. They are sound because:
//   - unsafePointer passes a pointer to a live Go object (a UTF-16 string)
//     to a system call that only reads it during the call;
//   - viewBytes makes a slice of a view returned by MapViewOfFile, whose
//     length is the length mapped; the slice is used only until
//     Section.Unmap, which its owner calls once nothing uses it, and the
//     garbage collector neither moves nor frees such memory;
//   - addrOf returns a buffer's address as an integer, for the peer's
//     ReadProcessMemory and WriteProcessMemory, which the kernel checks
//     against the peer's own mappings; it is never turned back into a
//     pointer;
//   - bytePtr gives the system call the first byte of a slice that the
//     caller owns for the duration of the call, with its length.

func unsafePointer(p *uint16) unsafe.Pointer { return unsafe.Pointer(p) }

func viewBytes(addr uintptr, n int) []byte {
	// The view is not Go memory: its address is read as a pointer from
	// the integer's storage (a uintptr -> unsafe.Pointer conversion that
	// vet cannot tell from a pointer hidden from the collector).
	p := *(*unsafe.Pointer)(unsafe.Pointer(&addr))
	return unsafe.Slice((*byte)(p), n)
}

// addrOf returns the address of b's first byte, or 0 for an empty slice.
func addrOf(b []byte) uintptr {
	if len(b) == 0 {
		return 0
	}
	return uintptr(unsafe.Pointer(unsafe.SliceData(b)))
}

func bytePtr(b []byte) *byte { return unsafe.SliceData(b) }
