package iwarp

import (
	"bytes"
	"encoding/hex"
	"strings"
	"testing"
)

// hx decodes hex written with spaces, '|' separators and newlines.
func hx(t testing.TB, s string) []byte {
	t.Helper()
	s = strings.NewReplacer(" ", "", "|", "", "\n", "", "\t", "").Replace(s)
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatalf("bad hex %q: %v", s, err)
	}
	return b
}

// cat concatenates byte slices into a new slice.
func cat(parts ...[]byte) []byte {
	return bytes.Join(parts, nil)
}

// rpingPattern rebuilds the 100-byte buffer rping fills for ping 0:
// "rdma-ping-0: " then letters from 'A' cycling through 'z', last byte 0.
func rpingPattern() []byte {
	b := []byte("rdma-ping-0: ")
	c := byte('A')
	for len(b) < 100 {
		b = append(b, c)
		c++
		if c > 'z' {
			c = 'A'
		}
	}
	b[99] = 0
	return b
}

func mustEqualBytes(t testing.TB, what string, got, want []byte) {
	t.Helper()
	if !bytes.Equal(got, want) {
		t.Fatalf("%s:\n got %x\nwant %x", what, got, want)
	}
}

// mpaEqual compares two frames field by field, private data by content.
func mpaEqual(a, b MPAFrame) bool {
	return a.Kind == b.Kind && a.Revision == b.Revision && a.Markers == b.Markers &&
		a.CRC == b.CRC && a.Reject == b.Reject && a.Enhanced == b.Enhanced &&
		a.IRD == b.IRD && a.ORD == b.ORD && a.PeerToPeer == b.PeerToPeer &&
		a.RTR == b.RTR && bytes.Equal(a.PrivateData, b.PrivateData)
}
