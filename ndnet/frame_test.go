package ndnet

import (
	"bytes"
	"encoding/hex"
	"errors"
	"testing"
)

// Golden encodings: each header and its exact bytes.
var goldenFrames = []struct {
	h       header
	payload []byte
	hex     string
}{
	{header{Type: frameData, Length: 3, SlotAck: 7, RingAck: 0x0102030405060708}, []byte("abc"),
		"02000000" + "00000003" + "00000007" + "00000000" + "0102030405060708" + "616263"},
	{header{Type: frameRing, Length: 65536, SlotAck: 0xFFFFFFFF, RingAck: 1 << 40}, nil,
		"03000000" + "00010000" + "ffffffff" + "00000000" + "0000010000000000"},
	{header{Type: frameFin, Flags: flagClosed}, nil,
		"05010000" + "00000000" + "00000000" + "00000000" + "0000000000000000"},
	{header{Type: frameCredit, SlotAck: 2, RingAck: 4096}, nil,
		"04000000" + "00000000" + "00000002" + "00000000" + "0000000000001000"},
	{header{Type: frameHello}, nil,
		"01000000" + "00000000" + "00000000" + "00000000" + "0000000000000000"},
}

func TestFrameGolden(t *testing.T) {
	for _, g := range goldenFrames {
		b := make([]byte, HeaderSize+len(g.payload))
		putHeader(b, g.h)
		copy(b[HeaderSize:], g.payload)
		if got := hex.EncodeToString(b); got != g.hex {
			t.Errorf("%v: encoded %s, want %s", g.h.Type, got, g.hex)
		}
		h, p, err := parseFrame(b)
		if err != nil || h != g.h || !bytes.Equal(p, g.payload) {
			t.Errorf("%v: parseFrame = %+v, %q, %v; want %+v, %q", g.h.Type, h, p, err, g.h, g.payload)
		}
	}
}

func TestFrameRejects(t *testing.T) {
	valid := func() []byte {
		b := make([]byte, HeaderSize+2)
		putHeader(b, header{Type: frameData, Length: 2})
		return b
	}
	cases := []struct {
		name string
		mod  func(b []byte) []byte
		want error
	}{
		{"short", func(b []byte) []byte { return b[:HeaderSize-1] }, errShortFrame},
		{"type 0", func(b []byte) []byte { b[0] = 0; return b }, errFrameType},
		{"type 8", func(b []byte) []byte { b[0] = 8; return b }, errFrameType},
		{"reserved", func(b []byte) []byte { b[3] = 1; return b }, errReserved},
		{"flags on data", func(b []byte) []byte { b[1] = flagClosed; return b }, errFrameFlags},
		{"length beyond bytes", func(b []byte) []byte { b[7] = 3; return b }, errFrameLength},
		{"length short of bytes", func(b []byte) []byte { return append(b, 0) }, errFrameLength},
		{"empty data", func(b []byte) []byte { b[7] = 0; return b[:HeaderSize] }, errEmptyFrame},
		{"ring with payload", func(b []byte) []byte { b[0] = byte(frameRing); return b }, errFrameLength},
		{"credit with length", func(b []byte) []byte { b[0] = byte(frameCredit); return b[:HeaderSize] }, errFrameLength},
		{"hello of 2 bytes", func(b []byte) []byte { b[0] = byte(frameHello); return b }, errHelloLength},
		{"fin flag 2", func(b []byte) []byte { b[0] = byte(frameFin); b[1] = 2; b[7] = 0; return b[:HeaderSize] }, errFrameFlags},
	}
	for _, c := range cases {
		if _, _, err := parseFrame(c.mod(valid())); !errors.Is(err, c.want) {
			t.Errorf("%s: parseFrame error %v, want %v", c.name, err, c.want)
		}
	}
}

func TestSetupGolden(t *testing.T) {
	s := setup{Version: 1, Depth: 32, FrameSize: 4096, RingSize: 1 << 20}
	b := make([]byte, SetupSize)
	putSetup(b, s)
	const want = "4e444e54" + "01" + "00" + "0020" + "00001000" + "00100000"
	if got := hex.EncodeToString(b); got != want {
		t.Fatalf("putSetup = %s, want %s", got, want)
	}
	if got, err := parseSetup(b); err != nil || got != s {
		t.Fatalf("parseSetup = %+v, %v", got, err)
	}
	bad := map[string]func([]byte){
		"magic":    func(b []byte) { b[0] = 0 },
		"version":  func(b []byte) { b[4] = 2 },
		"depth 1":  func(b []byte) { b[7] = 1 },
		"frame 8":  func(b []byte) { b[8], b[9], b[10], b[11] = 0, 0, 0, 8 },
		"ring odd": func(b []byte) { b[15] = 1 },
	}
	for name, mod := range bad {
		c := bytes.Clone(b)
		mod(c)
		if _, err := parseSetup(c); err == nil {
			t.Errorf("%s: parseSetup accepted %x", name, c)
		}
	}
	if _, err := parseSetup(b[:SetupSize-1]); err == nil {
		t.Errorf("parseSetup accepted %d bytes", SetupSize-1)
	}
}

// FuzzParseFrame: the decoder never panics, returns a payload inside its
// input, and what it accepts encodes back to the same bytes.
func FuzzParseFrame(f *testing.F) {
	for _, g := range goldenFrames {
		b, _ := hex.DecodeString(g.hex)
		f.Add(b)
	}
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		h, p, err := parseFrame(b)
		if err != nil {
			return
		}
		if len(p) > len(b)-HeaderSize {
			t.Fatalf("payload of %d bytes from %d", len(p), len(b))
		}
		out := make([]byte, HeaderSize+len(p))
		putHeader(out, h)
		copy(out[HeaderSize:], p)
		if !bytes.Equal(out, b) {
			t.Fatalf("re-encoded %x, input %x", out, b)
		}
	})
}

// FuzzParseSetup: never panics; what it accepts encodes back the same.
func FuzzParseSetup(f *testing.F) {
	b := make([]byte, SetupSize)
	putSetup(b, setup{Version: 1, Depth: 32, FrameSize: 4096, RingSize: 1 << 20})
	f.Add(b)
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := parseSetup(b)
		if err != nil {
			return
		}
		out := make([]byte, SetupSize)
		putSetup(out, s)
		if !bytes.Equal(out, b[:SetupSize]) {
			t.Fatalf("re-encoded %x, input %x", out, b[:SetupSize])
		}
	})
}
