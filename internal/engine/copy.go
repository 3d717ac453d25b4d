package engine

import "github.com/godirect/nd"

// Gather copies the bytes of sgl, in order, into dst, which must be at
// least as long as their total, and returns the count. The last byte of the
// whole copy is stored last, so that a peer polling it sees the rest in place
// (in-order placement).
func Gather(dst []byte, sgl []nd.SGE) int {
	n := 0
	for i := range sgl {
		n += copy(dst[n:], sgl[i].Buffer)
	}
	return n
}

// GatherInOrder is Gather with the in-order guarantee for RDMA Write: the
// last byte of the whole copy is stored last.
func GatherInOrder(dst []byte, sgl []nd.SGE) int {
	total := 0
	for i := range sgl {
		total += len(sgl[i].Buffer)
	}
	if total == 0 {
		return 0
	}
	n := 0
	for i := range sgl {
		b := sgl[i].Buffer
		if n+len(b) == total {
			b = b[:len(b)-1]
		}
		n += copy(dst[n:], b)
		if n == total-1 {
			break
		}
	}
	last := sgl[len(sgl)-1].Buffer
	for i := len(sgl) - 1; len(last) == 0; i-- {
		last = sgl[i-1].Buffer
	}
	dst[total-1] = last[len(last)-1]
	return total
}

// Scatter copies src into the entries of sgl in order and returns the
// count; src must not be longer than sgl holds.
func Scatter(sgl []nd.SGE, src []byte) int {
	n := 0
	for i := range sgl {
		if n == len(src) {
			break
		}
		n += copy(sgl[i].Buffer, src[n:])
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
			c := copy(dst[di].Buffer[doff:], b)
			b, doff, n = b[c:], doff+c, n+c
			if doff == len(dst[di].Buffer) {
				di, doff = di+1, 0
			}
		}
	}
	return n
}
