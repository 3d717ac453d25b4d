package iwarp

import (
	"bytes"
	"encoding/hex"
	"strings"
	"testing"
)

// Seed corpora: the golden frames of iwarp.md.

var seedMPAFrames = []string{
	reqKeyHex + "10 02 00 04 00 01 00 01",
	repKeyHex + "10 02 00 04 00 01 00 01",
	reqKeyHex + "10 02 00 04 00 00 00 00",
	reqKeyHex + "10 02 00 04 00 80 00 80",
	repKeyHex + "10 02 00 04 80 01 80 01",
	repKeyHex + "30 02 00 0b 00 01 00 01 676f2061776179",
	reqKeyHex + "50 02 0004 0001 0001",
	repKeyHex + "50 02 0004 0001 0001",
	reqKeyHex + "80 01 0000",
}

var seedFPDUs = []string{
	"00 22 41 43 00000000 00000000 00000001 00000000 00005622d6ed8450ec8fd20000000064 00000000",
	"00 0e c1 40 00000001 0000000000000000 00000000",
	"00 0e c1 40 00000001 0000000000000000 ebd34c5f",
	"00 2e 41 41 00000000 00000001 00000001 00000000 00000000 0000000000000000 00000000 00000001 0000000000000000 00000000",
	"00 12 41 43 00000000 00000000 00000001 00000000 00000000",
	"00 0e c1 42 00000000 0000000000000000 00000000",
	"00 2e 41 41 00000000 00000001 00000001 00000000 d41e2c00 0000556205595db0 00000064 ec8fd200 00005622d6ed8450 00000000",
	"00 26 41 47 00000000 00000002 00000001 00000000 11000300 000c c140deadbe000000000000001000 00000000",
	"0022 4143 00000000 00000000 00000001 00000000 0000000000100000 0a0b0c00 00000064 6780ce1d",
	"002e 4141 00000000 00000001 00000001 00000000 4dd7ec00 00005638f64e9db0 00000064 0a0b0c00 0000000000100000 7e63302a",
	"0022 4143 00000000 00000000 00000001 00000000 00000000000000000000000000000000 84609a12",
	"0022 4143 00000000 00000000 00000002 00000000 0000000000200000 0d0e0f00 00000064 2ce667ef",
	"0022 4143 00000000 00000000 00000002 00000000 00000000000000000000000000000000 b3e68405",
}

var seedTerminates = []string{
	"11 00 03 00 000c c140deadbe000000000000001000",
	"11 00 c0 00 000c c140deadbe000000000000001000",
	"21 02 03 00 0022 4143000000000000000000000001 00000000",
	"12 02 c0 00 0022 4143000000000000000000000001 00000000",
	"10 00 07 00 002e 414100000000000000010000000100000000 " + "00000000000000000000000000000000000000000000000000000000",
	"01 00 e0 00 002e 414100000000000000010000000100000000 " + "00000000000000000000000000000000000000000000000000000000",
	"20 07 03 00 002e 414100000000000000010000000100000000",
	"02 07 c0 00 002e 414100000000000000010000000100000000",
	"20 06 00 00",
}

func seedBytes(s string) []byte {
	b, err := hex.DecodeString(strings.ReplaceAll(s, " ", ""))
	if err != nil {
		panic(err)
	}
	return b
}

func FuzzParseMPAFrame(f *testing.F) {
	for _, s := range seedMPAFrames {
		f.Add(seedBytes(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		fr, n, err := ParseMPAFrame(b)
		if err == ErrShortBuffer {
			if n <= len(b) {
				t.Fatalf("short buffer asks for %d with %d", n, len(b))
			}
			return
		}
		if err != nil && err != ErrMPAMarkers {
			return
		}
		if n < MPAHeaderSize || n > len(b) {
			t.Fatalf("n %d of %d", n, len(b))
		}
		out, err2 := AppendMPAFrame(nil, &fr)
		if err2 != nil {
			t.Fatalf("re-encode %+v: %v", fr, err2)
		}
		if len(out) != n {
			t.Fatalf("re-encoded %d bytes, consumed %d", len(out), n)
		}
		fr2, n2, err3 := ParseMPAFrame(out)
		if err3 != err || n2 != n || !mpaEqual(fr, fr2) {
			t.Fatalf("round trip: %+v vs %+v (%v)", fr, fr2, err3)
		}
	})
}

func FuzzParseFPDU(f *testing.F) {
	for _, s := range seedFPDUs {
		f.Add(seedBytes(s), false)
		f.Add(seedBytes(s), true)
	}
	f.Fuzz(func(t *testing.T, b []byte, crcOn bool) {
		ulpdu, n, err := ParseFPDU(b, crcOn)
		if err == ErrShortBuffer {
			if n <= len(b) {
				t.Fatalf("short buffer asks for %d with %d", n, len(b))
			}
			return
		}
		if err != nil {
			return
		}
		if n != FPDUSize(len(ulpdu)) || n > len(b) {
			t.Fatalf("n %d ulpdu %d", n, len(ulpdu))
		}
		out, err := AppendFPDU(nil, ulpdu, crcOn)
		if err != nil {
			t.Fatal(err)
		}
		if crcOn && !bytes.Equal(out, b[:n]) {
			t.Fatalf("re-encoded FPDU differs:\n%x\n%x", out, b[:n])
		}
		u2, n2, err := ParseFPDU(out, crcOn)
		if err != nil || n2 != n || !bytes.Equal(u2, ulpdu) {
			t.Fatalf("round trip: %v", err)
		}
	})
}

func FuzzParseFPDUHeader(f *testing.F) {
	for _, s := range seedFPDUs {
		f.Add(seedBytes(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		h, n, err := ParseFPDUHeader(b)
		if err == ErrShortBuffer {
			if n <= len(b) {
				t.Fatalf("short buffer asks for %d with %d", n, len(b))
			}
			return
		}
		if err != nil {
			return
		}
		if n != h.HeaderLen() || n > len(b) || h.PayloadLen() < 0 || h.Size() != n+h.PayloadLen()+h.TrailerLen() {
			t.Fatalf("inconsistent sizes %+v n %d", h, n)
		}
		out, err := AppendFPDUHeader(nil, &h.SegmentHeader, h.PayloadLen())
		if err != nil {
			t.Fatal(err)
		}
		h2, n2, err := ParseFPDUHeader(append(out, make([]byte, 4)...))
		if err != nil || n2 != n || h2 != h {
			t.Fatalf("round trip %+v vs %+v: %v", h, h2, err)
		}
	})
}

func FuzzParseSegment(f *testing.F) {
	for _, s := range seedFPDUs {
		b := seedBytes(s)
		f.Add(b[2 : len(b)-4])
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		seg, err := ParseSegment(b)
		if err != nil {
			return
		}
		if seg.Len()+len(seg.Payload) != len(b) {
			t.Fatalf("header %d + payload %d != %d", seg.Len(), len(seg.Payload), len(b))
		}
		out, err := AppendSegmentHeader(nil, &seg.SegmentHeader)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, seg.Payload...)
		seg2, err := ParseSegment(out)
		if err != nil || seg2.SegmentHeader != seg.SegmentHeader || !bytes.Equal(seg2.Payload, seg.Payload) {
			t.Fatalf("round trip %+v vs %+v: %v", seg.SegmentHeader, seg2.SegmentHeader, err)
		}
		// Reserved bits aside, the encoding is the input.
		b0, o0 := b[0]&^0x3c, out[0]
		if b0 != o0 || b[1]&^0x30 != out[1] || !bytes.Equal(b[2:], out[2:]) {
			t.Fatalf("re-encoding differs:\n%x\n%x", b, out)
		}
	})
}

func FuzzParseReadRequest(f *testing.F) {
	f.Add(seedBytes("d41e2c00 0000556205595db0 00000064 ec8fd200 00005622d6ed8450"))
	f.Add(seedBytes("4dd7ec00 00005638f64e9db0 00000064 0a0b0c00 0000000000100000"))
	f.Add(make([]byte, 28))
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := ParseReadRequest(b)
		if err != nil {
			return
		}
		if out := AppendReadRequest(nil, &r); !bytes.Equal(out, b) {
			t.Fatalf("re-encoding differs:\n%x\n%x", b, out)
		}
	})
}

func FuzzParseTerminate(f *testing.F) {
	for _, s := range seedTerminates {
		f.Add(seedBytes(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		term, err := ParseTerminate(b)
		if err != nil {
			return
		}
		out, err := AppendTerminate(nil, &term)
		if err != nil {
			t.Fatalf("re-encode %+v: %v", term, err)
		}
		if len(out) != term.Len() || len(out) > len(b) {
			t.Fatalf("re-encoded %d bytes from %d", len(out), len(b))
		}
		t2, err := ParseTerminate(out)
		if err != nil || t2.Layer != term.Layer || t2.EType != term.EType || t2.Code != term.Code ||
			t2.Layout != term.Layout || t2.SegmentLengthValid != term.SegmentLengthValid ||
			t2.SegmentLength != term.SegmentLength || !bytes.Equal(t2.DDPHeader, term.DDPHeader) ||
			!bytes.Equal(t2.RDMAPHeader, term.RDMAPHeader) {
			t.Fatalf("round trip %+v vs %+v: %v", term, t2, err)
		}
	})
}

// FuzzSegmenter checks segmentation invariants and reassembly for arbitrary
// message lengths, segment sizes and addressing.
func FuzzSegmenter(f *testing.F) {
	f.Add(uint32(0), uint16(1), uint64(0), true)
	f.Add(uint32(100), uint16(23), uint64(0x5638f64e9db0), true)
	f.Add(uint32(4097), uint16(1428), uint64(0), false)
	f.Add(uint32(65537), uint16(65516), ^uint64(0)-70000, false)
	f.Fuzz(func(t *testing.T, msgLen uint32, maxPayload uint16, to uint64, tagged bool) {
		l := int(msgLen % (1 << 18))
		first := SegmentHeader{Opcode: OpSendSE, QN: QNSend, MSN: 1}
		if tagged {
			first = SegmentHeader{Opcode: OpReadResponse, STag: 0x100, TO: to}
		}
		s, err := NewSegmenter(first, l, int(maxPayload))
		if err != nil {
			return
		}
		var r Reassembler
		placed := 0
		for {
			h, off, n, ok := s.Next()
			if !ok {
				break
			}
			if off != placed || n < 0 || n > int(maxPayload) {
				t.Fatalf("off %d n %d placed %d", off, n, placed)
			}
			if _, err := r.Accept(&h, n); err != nil {
				t.Fatalf("reassembler rejects own segmentation: %v (%+v n %d)", err, h, n)
			}
			placed += n
			if h.Last != (placed == l) {
				t.Fatalf("last flag %v at %d of %d", h.Last, placed, l)
			}
		}
		if placed != l {
			t.Fatalf("placed %d of %d", placed, l)
		}
	})
}
