package remote

import (
	"unsafe"

	"github.com/godirect/nd"
)

// Memory synchronisation helpers.
//
// A registration of a proxied adapter exists twice: the caller's buffer in
// the parent (P) and a buffer of the same length in the child (C), which the
// child's provider reads and writes. Each side keeps a shadow of the last
// state both agreed on (S, the same bytes on both sides). A push sends the
// chunks where P differs from S; a pull sends the chunks where C differs
// from S. Applying a chunk merges byte by byte: bytes the sender changed
// (data differs from S) overwrite, the others are left alone, so a change the
// receiving side made to other bytes of the same chunk survives until its
// own turn to send.
//
// P is read and written while the caller's goroutines may use it, and C while
// the child's provider places data into it (a peer's RDMA Write in flight):
// the proxy only promises that memory is in step at its call boundaries, as
// an RDMA application expects of memory a transfer may touch. These accesses
// are therefore made by functions the race detector does not instrument
// (go:norace); the memory model's guarantees at the boundaries come from the
// calls themselves (a completion reaped, a response received).

// chunkSize is the granularity of the comparison and of the transfer.
const chunkSize = 4096

// equalNoRace reports whether a and b hold the same bytes.
//
//go:norace
//go:nocheckptr
func equalNoRace(a, b []byte) bool {
	n := len(a)
	if n != len(b) {
		return false
	}
	pa, pb := unsafe.Pointer(unsafe.SliceData(a)), unsafe.Pointer(unsafe.SliceData(b))
	i := 0
	for ; i+32 <= n; i += 32 {
		if *(*uint64)(unsafe.Add(pa, i)) != *(*uint64)(unsafe.Add(pb, i)) ||
			*(*uint64)(unsafe.Add(pa, i+8)) != *(*uint64)(unsafe.Add(pb, i+8)) ||
			*(*uint64)(unsafe.Add(pa, i+16)) != *(*uint64)(unsafe.Add(pb, i+16)) ||
			*(*uint64)(unsafe.Add(pa, i+24)) != *(*uint64)(unsafe.Add(pb, i+24)) {
			return false
		}
	}
	for ; i+8 <= n; i += 8 {
		if *(*uint64)(unsafe.Add(pa, i)) != *(*uint64)(unsafe.Add(pb, i)) {
			return false
		}
	}
	for ; i < n; i++ {
		if *(*byte)(unsafe.Add(pa, i)) != *(*byte)(unsafe.Add(pb, i)) {
			return false
		}
	}
	return true
}

// isZeroNoRace reports whether b holds only zero bytes.
//
//go:norace
//go:nocheckptr
func isZeroNoRace(b []byte) bool {
	n := len(b)
	p := unsafe.Pointer(unsafe.SliceData(b))
	i := 0
	for ; i+32 <= n; i += 32 {
		if *(*uint64)(unsafe.Add(p, i))|*(*uint64)(unsafe.Add(p, i+8))|*(*uint64)(unsafe.Add(p, i+16))|*(*uint64)(unsafe.Add(p, i+24)) != 0 {
			return false
		}
	}
	for ; i < n; i++ {
		if *(*byte)(unsafe.Add(p, i)) != 0 {
			return false
		}
	}
	return true
}

// copyNoRace copies src into dst, which must be as long.
//
//go:norace
//go:nocheckptr
func copyNoRace(dst, src []byte) {
	n := min(len(dst), len(src))
	pd, ps := unsafe.Pointer(unsafe.SliceData(dst)), unsafe.Pointer(unsafe.SliceData(src))
	i := 0
	for ; i+8 <= n; i += 8 {
		*(*uint64)(unsafe.Add(pd, i)) = *(*uint64)(unsafe.Add(ps, i))
	}
	for ; i < n; i++ {
		*(*byte)(unsafe.Add(pd, i)) = *(*byte)(unsafe.Add(ps, i))
	}
}

// mergeNoRace applies data, the sender's new state of a chunk whose agreed
// state is base, to live: the bytes the sender changed overwrite live's.
// base becomes data.
//
//go:norace
//go:nocheckptr
func mergeNoRace(live, base, data []byte) {
	if equalNoRace(live, base) {
		copyNoRace(live, data)
	} else {
		pl, pb, pd := unsafe.Pointer(unsafe.SliceData(live)), unsafe.Pointer(unsafe.SliceData(base)), unsafe.Pointer(unsafe.SliceData(data))
		for i := range min(len(live), len(base), len(data)) {
			if d := *(*byte)(unsafe.Add(pd, i)); d != *(*byte)(unsafe.Add(pb, i)) {
				*(*byte)(unsafe.Add(pl, i)) = d
			}
		}
	}
	copyNoRace(base, data)
}

// diffNoRace appends to out, for each chunk where live differs from base,
// the chunk (a slice of base after base was updated to live's bytes).
func diffNoRace(out []chunk, region uint64, live, base []byte) []chunk {
	for off := 0; off < len(live); off += chunkSize {
		end := min(off+chunkSize, len(live))
		if !equalNoRace(live[off:end], base[off:end]) {
			copyNoRace(base[off:end], live[off:end])
			out = append(out, chunk{region: region, off: uint64(off), data: base[off:end]})
		}
	}
	return out
}

// applyChunk merges c into live and base; it ignores a chunk that does not
// fit.
func applyChunk(c chunk, live, base []byte) {
	if c.off > uint64(len(live)) || uint64(len(c.data)) > uint64(len(live))-c.off || len(base) != len(live) {
		return
	}
	end := c.off + uint64(len(c.data))
	mergeNoRace(live[c.off:end], base[c.off:end], c.data)
}

// readResultNoRace reads a Result that a provider may write at any time
// (a memory window's invalidate Result).
//
//go:norace
func readResultNoRace(r *nd.Result) (nd.Status, int) { return r.Status, r.BytesTransferred }

// writeResultNoRace writes a Result the caller may read at any time.
//
//go:norace
func writeResultNoRace(r *nd.Result, s nd.Status, n int) { r.Status, r.BytesTransferred = s, n }

// within reports whether sub lies inside buf and its offset there. An empty
// sub lies anywhere (offset 0), as for the engine's check of a registration.
func within(buf, sub []byte) (uint64, bool) {
	if len(sub) == 0 {
		return 0, true
	}
	b, s := uintptr(unsafe.Pointer(unsafe.SliceData(buf))), uintptr(unsafe.Pointer(unsafe.SliceData(sub)))
	if s < b || s-b > uintptr(len(buf)) || uintptr(len(sub)) > uintptr(len(buf))-(s-b) {
		return 0, false
	}
	return uint64(s - b), true
}
