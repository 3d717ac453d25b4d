package engine

import "github.com/godirect/nd"

// Copy is the built-in copy for the data path: copies of 1 MiB to 8 MiB
// go in 512 KiB pieces. From 1 MiB on, Go's memmove (amd64) writes with
// non-temporal stores, which go around the cache to memory; up to a few
// MiB source and destination still fit in the cache, and the pieces, each
// below that threshold, keep to it. Beyond the upper bound the pieces were
// slower. The pieces go front to back, so the last byte is still stored
// last (in-order placement).
//
// provider/shm's direct RDMA Read, a copy from the target's memory into
// the initiator's, keeps the built-in copy: there the pieces were slower,
// since the target's core holds the source in its cache too. Figures:
// docs/shm-transport.md, "Data path".
func Copy(dst, src []byte) int {
	n := min(len(dst), len(src))
	if n < copyPieceFrom || n > copyPieceTo {
		return copy(dst, src)
	}
	for off := 0; off < n; off += copyPiece {
		end := min(off+copyPiece, n)
		copy(dst[off:end], src[off:end])
	}
	return n
}

const (
	copyPiece     = 512 << 10
	copyPieceFrom = 1 << 20
	copyPieceTo   = 8 << 20
)

// Place is Copy for bytes an application may poll: inbound RDMA Write
// data, whose last byte a target polls and may then overwrite (ND's
// ping-pong tools store their answer in the very byte they polled). Go's
// memmove may store a byte twice: a one-byte copy stores it with two
// instructions, and a copy whose tail is one byte past a block does the
// same with the last byte. A poller that saw the first of those stores
// and wrote its answer could have that answer undone by the second
// (TestPlaceStoresLastByteOnce; docs/tcp-transport.md). Place stores the
// last byte once, by its own store after the others, so the last byte
// changes exactly once and only after the rest is in place (in-order
// placement).
func Place(dst, src []byte) int {
	n := min(len(dst), len(src))
	if n == 0 {
		return 0
	}
	Copy(dst[:n-1], src[:n-1])
	dst[n-1] = src[n-1]
	return n
}

// GatherInOrder copies the bytes of sgl, in order, into dst, which must be
// at least as long as their total, and returns the count, with the
// in-order guarantee for RDMA Write: the last byte of the whole copy is
// stored once, after the rest (Place).
func GatherInOrder(dst []byte, sgl []nd.SGE) int {
	last := len(sgl) - 1
	for last >= 0 && len(sgl[last].Buffer) == 0 {
		last--
	}
	n := 0
	for i := 0; i < last; i++ {
		n += Copy(dst[n:], sgl[i].Buffer)
	}
	if last >= 0 {
		n += Place(dst[n:], sgl[last].Buffer)
	}
	return n
}

// Scatter copies src into the entries of sgl in order and returns the
// count; src must not be longer than sgl holds.
func Scatter(sgl []nd.SGE, src []byte) int {
	n := 0
	for i := range sgl {
		if n == len(src) {
			break
		}
		n += Copy(sgl[i].Buffer, src[n:])
	}
	return n
}

// Transfer copies the bytes of the gather list src into the scatter list
// dst, in order, and returns the count.
func Transfer(dst, src []nd.SGE) int {
	n, di, doff := 0, 0, 0
	for i := range src {
		b := src[i].Buffer
		for len(b) > 0 && di < len(dst) {
			c := Copy(dst[di].Buffer[doff:], b)
			b, doff, n = b[c:], doff+c, n+c
			if doff == len(dst[di].Buffer) {
				di, doff = di+1, 0
			}
		}
	}
	return n
}
