package verify

import (
	"bytes"
	"encoding/binary"
)

// guard is the byte the server keeps in its window and the client in its
// Read sinks outside the bytes a message fills, so that a message longer
// than it should be, or placed at the wrong offset, is seen.
const guard = 0xA5

// guardBlock is a block of guard bytes to copy from.
var guardBlock = bytes.Repeat([]byte{guard}, 4096)

// fillGuard fills b with the guard byte.
func fillGuard(b []byte) {
	for len(b) > 0 {
		n := copy(b, guardBlock)
		b = b[n:]
	}
}

// pattern fills b with message number seq's bytes for a message of len(b)
// bytes: a xorshift stream seeded by both, so that no two messages of a
// run, and no two offsets of one message, carry the same bytes.
func pattern(b []byte, seq uint64) {
	x := seq*0x9E3779B97F4A7C15 ^ uint64(len(b))*0xC2B2AE3D27D4EB4F | 1
	var w [8]byte
	for len(b) >= 8 {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		binary.LittleEndian.PutUint64(b, x)
		b = b[8:]
	}
	if len(b) > 0 {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		binary.LittleEndian.PutUint64(w[:], x)
		copy(b, w[:])
	}
}

// mismatch returns the offset of the first byte of got that differs from
// message seq's pattern (scratch, at least len(got) bytes, is
// overwritten), or -1.
func mismatch(got []byte, seq uint64, scratch []byte) int {
	want := scratch[:len(got)]
	pattern(want, seq)
	if bytes.Equal(got, want) {
		return -1
	}
	for i := range got {
		if got[i] != want[i] {
			return i
		}
	}
	return -1
}
