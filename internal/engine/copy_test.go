package engine

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/godirect/nd"
)

// TestCopy: Copy moves exactly min(len(dst), len(src)) bytes, whatever
// the size and whether it goes in pieces, and leaves the rest of dst alone.
func TestCopy(t *testing.T) {
	for _, n := range []int{0, 1, 4096, copyPieceFrom - 1, copyPieceFrom, copyPieceFrom + copyPiece/2 + 3, copyPieceTo, copyPieceTo + 1} {
		for _, short := range []int{0, 1, copyPiece + 5} {
			if short > n {
				continue
			}
			src := make([]byte, n)
			for i := range src {
				src[i] = byte(i*7 + i>>16)
			}
			dst := bytes.Repeat([]byte{0xEE}, n+16)
			m := Copy(dst[:n-short], src)
			if m != n-short {
				t.Fatalf("n=%d short=%d: copied %d, want %d", n, short, m, n-short)
			}
			if !bytes.Equal(dst[:m], src[:m]) {
				t.Fatalf("n=%d short=%d: bytes differ", n, short)
			}
			if bytes.Count(dst[m:], []byte{0xEE}) != len(dst)-m {
				t.Fatalf("n=%d short=%d: wrote past the copy", n, short)
			}
		}
	}
}

// BenchmarkCopy compares Copy with the built-in copy around Go memmove's
// non-temporal threshold (1 MiB).
func BenchmarkCopy(b *testing.B) {
	for _, n := range []int{512 << 10, 1 << 20, 4 << 20, 16 << 20} {
		src, dst := bytes.Repeat([]byte{1}, n), bytes.Repeat([]byte{2}, n)
		b.Run(fmt.Sprintf("Copy/%dKiB", n>>10), func(b *testing.B) {
			b.SetBytes(int64(n))
			for b.Loop() {
				Copy(dst, src)
			}
		})
		b.Run(fmt.Sprintf("builtin/%dKiB", n>>10), func(b *testing.B) {
			b.SetBytes(int64(n))
			for b.Loop() {
				copy(dst, src)
			}
		})
	}
}

// TestGatherInOrder gathers lists whose last entries are empty or one byte
// long: the bytes land in order, all of them, and nothing past them.
func TestGatherInOrder(t *testing.T) {
	for _, lens := range [][]int{{}, {0}, {1}, {3, 1}, {3, 1, 0, 0}, {0, 5}, {4, 0, 7, 0}, {1, 1, 1}} {
		var sgl []nd.SGE
		var want []byte
		for i, n := range lens {
			b := make([]byte, n)
			for j := range b {
				b[j] = byte(10*i + j + 1)
			}
			sgl = append(sgl, nd.SGE{Buffer: b})
			want = append(want, b...)
		}
		dst := bytes.Repeat([]byte{0xee}, len(want)+2)
		if n := GatherInOrder(dst, sgl); n != len(want) || !bytes.Equal(dst[:n], want) || dst[n] != 0xee || dst[n+1] != 0xee {
			t.Errorf("lengths %v: GatherInOrder = %d, dst %x; want %d, %x then ee ee", lens, n, dst, len(want), want)
		}
	}
}
