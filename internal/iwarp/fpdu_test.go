package iwarp

import (
	"bytes"
	"encoding/binary"
	"testing"
)

func TestFPDUSizes(t *testing.T) {
	cases := []struct{ ulpdu, pad, size int }{
		{14, 0, 20}, {15, 3, 24}, {16, 2, 24}, {17, 1, 24}, {18, 0, 24},
		{34, 0, 40}, {46, 0, 52}, {114, 0, 120}, {65535, 3, 65544}, {0, 2, 8},
	}
	for _, tc := range cases {
		if FPDUPad(tc.ulpdu) != tc.pad || FPDUSize(tc.ulpdu) != tc.size || FPDUTrailerSize(tc.ulpdu) != tc.pad+4 {
			t.Errorf("ulpdu %d: pad %d size %d", tc.ulpdu, FPDUPad(tc.ulpdu), FPDUSize(tc.ulpdu))
		}
	}
	for p := range 64 {
		for _, hl := range []int{TaggedHeaderSize, UntaggedHeaderSize} {
			if FPDUPad(hl+p) != -p&3 {
				t.Fatalf("pad depends on payload only: %d %d", hl, p)
			}
		}
	}
}

// buildFPDU makes an FPDU with a Send header and payload of n bytes.
func buildFPDU(t testing.TB, n int, crcOn bool) []byte {
	t.Helper()
	payload := make([]byte, n)
	for i := range payload {
		payload[i] = byte(i*7 + 1)
	}
	h := SegmentHeader{Opcode: OpSend, Last: true, MSN: 9}
	b, err := AppendFPDUSegment(nil, &h, payload, crcOn)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestFPDUGatherAndStream(t *testing.T) {
	for _, crcOn := range []bool{false, true} {
		for n := range 40 {
			wire := buildFPDU(t, n, crcOn)
			if len(wire) != FPDUSize(UntaggedHeaderSize+n) || len(wire)%4 != 0 {
				t.Fatalf("size %d for payload %d", len(wire), n)
			}
			// Sender: payload scattered over 3 slices.
			payload := wire[20 : 20+n]
			h := SegmentHeader{Opcode: OpSend, Last: true, MSN: 9}
			hdr, err := AppendFPDUHeader(make([]byte, 0, 20), &h, n)
			if err != nil {
				t.Fatal(err)
			}
			a, b, c := payload[:n/3], payload[n/3:n/2], payload[n/2:]
			crc := UpdateCRC(UpdateCRC(UpdateCRC(UpdateCRC(0, hdr), a), b), c)
			tr := AppendFPDUTrailer(nil, h.Len()+n, crc, crcOn)
			mustEqualBytes(t, "gathered", cat(hdr, a, b, c, tr), wire)

			// Receiver: every prefix either asks for more or parses.
			for have := 0; have < len(wire); have++ {
				_, need, err := ParseFPDU(wire[:have], crcOn)
				if err != ErrShortBuffer || need <= have {
					t.Fatalf("prefix %d: need %d err %v", have, need, err)
				}
			}
			ulpdu, m, err := ParseFPDU(append(bytes.Clone(wire), 0xff, 0xff), crcOn)
			if err != nil || m != len(wire) || len(ulpdu) != 18+n {
				t.Fatalf("full: %d %v", m, err)
			}
		}
	}
}

func TestFPDUErrors(t *testing.T) {
	wire := buildFPDU(t, 5, true) // ULPDU 23, pad 3
	mod := func(f func(b []byte)) []byte { b := bytes.Clone(wire); f(b); return b }
	cases := []struct {
		name  string
		in    []byte
		crcOn bool
		err   error
		n     int
	}{
		{"empty", nil, true, ErrShortBuffer, MinFPDUSize},
		{"one byte", wire[:1], true, ErrShortBuffer, MinFPDUSize},
		{"length only", wire[:2], true, ErrShortBuffer, len(wire)},
		{"missing CRC byte", wire[:len(wire)-1], true, ErrShortBuffer, len(wire)},
		{"ULPDU 0", mod(func(b []byte) { b[0], b[1] = 0, 0 }), true, ErrFPDULength, 0},
		{"ULPDU 13", mod(func(b []byte) { b[0], b[1] = 0, 13 }), true, ErrFPDULength, 0},
		{"huge length", mod(func(b []byte) { b[0], b[1] = 0xff, 0xff }), true, ErrShortBuffer, 65544},
		{"bad pad", mod(func(b []byte) { b[25] = 1 }), true, ErrFPDUPad, 0},
		{"bad pad, CRC off", mod(func(b []byte) { b[25] = 0x80 }), false, ErrFPDUPad, 0},
		{"bad CRC", mod(func(b []byte) { b[len(b)-1] ^= 0x80 }), true, ErrFPDUCRC, 0},
		{"bad payload", mod(func(b []byte) { b[21] ^= 0x10 }), true, ErrFPDUCRC, 0},
		{"big-endian CRC", mod(func(b []byte) {
			c := binary.LittleEndian.Uint32(b[len(b)-4:])
			binary.BigEndian.PutUint32(b[len(b)-4:], c)
		}), true, ErrFPDUCRC, 0},
	}
	for _, tc := range cases {
		u, n, err := ParseFPDU(tc.in, tc.crcOn)
		if err != tc.err || n != tc.n || u != nil {
			t.Errorf("%s: n %d err %v, want n %d err %v", tc.name, n, err, tc.n, tc.err)
		}
	}
	// Trailer checks.
	if err := CheckFPDUTrailer(make([]byte, 4), 23, 0, false); err != ErrShortBuffer {
		t.Errorf("short trailer: %v", err)
	}
	if err := CheckFPDUTrailer([]byte{0, 1, 2, 3, 4}, 25, 0, false); err != nil {
		t.Errorf("CRC off trailer: %v", err)
	}
	// Encoders.
	h := SegmentHeader{Opcode: OpWrite}
	if _, err := AppendFPDUHeader(nil, &h, MaxULPDULength-TaggedHeaderSize+1); err != ErrFPDUTooLong {
		t.Errorf("too long: %v", err)
	}
	if b, err := AppendFPDUHeader(nil, &h, MaxULPDULength-TaggedHeaderSize); err != nil || b[0] != 0xff || b[1] != 0xff {
		t.Errorf("max length: %x %v", b, err)
	}
	if _, err := AppendFPDUHeader(nil, &h, -1); err != ErrFPDUTooLong {
		t.Errorf("negative: %v", err)
	}
	h.Opcode = 8
	if _, err := AppendFPDUHeader(nil, &h, 0); err != ErrOpcode {
		t.Errorf("bad opcode: %v", err)
	}
	if _, err := AppendFPDUSegment(nil, &h, nil, true); err != ErrOpcode {
		t.Errorf("bad opcode segment: %v", err)
	}
	if _, err := AppendFPDU(nil, make([]byte, MaxULPDULength+1), false); err != ErrFPDUTooLong {
		t.Errorf("AppendFPDU too long: %v", err)
	}
	big, err := AppendFPDU(nil, make([]byte, MaxULPDULength), true)
	if err != nil || len(big) != FPDUSize(MaxULPDULength) {
		t.Errorf("AppendFPDU max: %d %v", len(big), err)
	}
}

func TestFPDUHeaderErrors(t *testing.T) {
	send := hx(t, "00 12 41 43 00000000 00000000 00000001 00000000")
	write := hx(t, "00 0e c1 40 00000001 0000000000000000")
	mod := func(b []byte, f func(b []byte)) []byte { b = bytes.Clone(b); f(b); return b }
	cases := []struct {
		name string
		in   []byte
		err  error
		n    int
	}{
		{"empty", nil, ErrShortBuffer, 16},
		{"15 bytes", write[:15], ErrShortBuffer, 16},
		{"untagged 16 bytes", send[:16], ErrShortBuffer, 20},
		{"untagged 19 bytes", send[:19], ErrShortBuffer, 20},
		{"untagged length 17", mod(send, func(b []byte) { b[1] = 17 }), ErrFPDULength, 0},
		{"tagged length 13", mod(write, func(b []byte) { b[1] = 13 }), ErrFPDULength, 0},
		{"DDP version 0", mod(write, func(b []byte) { b[2] = 0xc0 }), ErrDDPVersion, 0},
		{"DDP version 2", mod(send, func(b []byte) { b[2] = 0x42 }), ErrDDPVersion, 0},
		{"RDMAP version 0", mod(send, func(b []byte) { b[3] = 0x03 }), ErrRDMAPVersion, 0},
		{"RDMAP version 3", mod(write, func(b []byte) { b[3] = 0xc0 }), ErrRDMAPVersion, 0},
		{"opcode 8", mod(send, func(b []byte) { b[3] = 0x48 }), ErrOpcode, 0},
		{"opcode 15", mod(write, func(b []byte) { b[3] = 0x4f }), ErrOpcode, 0},
		{"untagged Write", mod(send, func(b []byte) { b[3] = 0x40 }), ErrOpcode, 0},
		{"tagged Send", mod(write, func(b []byte) { b[3] = 0x43 }), ErrOpcode, 0},
	}
	for _, tc := range cases {
		_, n, err := ParseFPDUHeader(tc.in)
		if err != tc.err || n != tc.n {
			t.Errorf("%s: n %d err %v, want n %d err %v", tc.name, n, err, tc.n, tc.err)
		}
	}
	// Reserved bits are ignored.
	h, _, err := ParseFPDUHeader(mod(write, func(b []byte) { b[2] |= 0x3c; b[3] |= 0x30 }))
	if err != nil || h.Opcode != OpWrite || !h.Last || h.STag != 1 {
		t.Errorf("reserved bits: %+v %v", h, err)
	}
}
