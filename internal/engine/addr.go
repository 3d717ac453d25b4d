package engine

import "unsafe"

// addrOf returns the address of b's first byte, or 0 for a slice with no
// backing array. It is the only use of unsafe in the engine: addresses are
// compared to decide whether a caller's slice lies inside a registered
// buffer, and used as the Base of memory window descriptors (as hardware
// does with virtual addresses). They are never turned back into pointers, so
// the garbage collector's view of memory is not affected; registered buffers
// are kept alive by their Region, so their addresses stay valid (Go's heap
// does not move objects).
func addrOf(b []byte) uintptr {
	return uintptr(unsafe.Pointer(unsafe.SliceData(b)))
}

// within reports whether sub lies entirely inside buf and returns its
// offset in buf. An empty sub is within any buf.
func within(buf, sub []byte) (int, bool) {
	if len(sub) == 0 {
		return 0, true
	}
	b, s := addrOf(buf), addrOf(sub)
	if s < b || s-b > uintptr(len(buf)) || uintptr(len(sub)) > uintptr(len(buf))-(s-b) {
		return 0, false
	}
	return int(s - b), true
}
