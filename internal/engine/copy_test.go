package engine

import (
	"bytes"
	"fmt"
	"testing"
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
