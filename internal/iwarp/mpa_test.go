package iwarp

import (
	"bytes"
	"testing"
)

func TestMPARoundTrip(t *testing.T) {
	pd := bytes.Repeat([]byte{0xa5}, MPAMaxPrivateData)
	var frames []MPAFrame
	for _, kind := range []MPAKind{MPARequest, MPAReply} {
		for _, rev := range []uint8{MPARevision1, MPARevision2} {
			for _, pdLen := range []int{0, 1, 7, SiwMaxUserPrivateData, MPAMaxPrivateData - 4, MPAMaxPrivateData} {
				for flags := range 16 {
					f := MPAFrame{Kind: kind, Revision: rev, CRC: flags&1 != 0, Reject: kind == MPAReply && flags&2 != 0}
					if rev == MPARevision2 && flags&4 != 0 {
						if pdLen > MPAMaxPrivateData-MPAEnhancedWordSize {
							continue
						}
						f.Enhanced = true
						f.IRD, f.ORD = uint16(flags*1000), MaxIRDORD-uint16(pdLen)
						f.PeerToPeer = flags&8 != 0
						f.RTR = RTRFlags(flags & 7)
					}
					if pdLen > 0 {
						f.PrivateData = pd[:pdLen]
					}
					frames = append(frames, f)
				}
			}
		}
	}
	for _, f := range frames {
		wire, err := AppendMPAFrame(nil, &f)
		if err != nil {
			t.Fatalf("%+v: %v", f, err)
		}
		if len(wire) != f.Len() {
			t.Fatalf("Len %d, wrote %d", f.Len(), len(wire))
		}
		// Feed it byte by byte as a stream reader would.
		need := 0
		for have := 0; ; {
			g, n, err := ParseMPAFrame(wire[:have])
			if err == ErrShortBuffer {
				if n <= have || n > len(wire) {
					t.Fatalf("need %d with %d of %d", n, have, len(wire))
				}
				need++
				have = n
				continue
			}
			if err != nil || n != len(wire) || !mpaEqual(g, f) {
				t.Fatalf("decode %+v n %d err %v, want %+v", g, n, err, f)
			}
			break
		}
		if need > 2 {
			t.Fatalf("reader needed %d short reads", need)
		}
		// Trailing FPDU bytes are not consumed.
		g, n, err := ParseMPAFrame(append(bytes.Clone(wire), 0, 0x0e, 0xc1, 0x40))
		if err != nil || n != len(wire) || !mpaEqual(g, f) {
			t.Fatalf("with trailing bytes: n %d err %v", n, err)
		}
	}
}

func TestMPAParseQuirks(t *testing.T) {
	base := hx(t, reqKeyHex+"10 02 00 04 00 01 00 01")
	// Reserved bits (siw's GSO bit 0x08 and the rest) are ignored; R is
	// ignored in a request.
	q := bytes.Clone(base)
	q[16] |= 0x2f
	f, _, err := ParseMPAFrame(q)
	if err != nil || f.Reject || !f.Enhanced || f.IRD != 1 {
		t.Fatalf("reserved bits: %+v %v", f, err)
	}
	// H on revision 1 is ignored: the 4 bytes stay private data.
	q = bytes.Clone(base)
	q[17] = 1
	f, _, err = ParseMPAFrame(q)
	if err != nil || f.Enhanced || f.IRD != 0 || !bytes.Equal(f.PrivateData, hx(t, "00010001")) {
		t.Fatalf("rev 1 with H: %+v %v", f, err)
	}
	// Revision 2 without H: plain private data.
	q = bytes.Clone(base)
	q[16] = 0
	f, _, err = ParseMPAFrame(q)
	if err != nil || f.Enhanced || len(f.PrivateData) != 4 {
		t.Fatalf("rev 2 without H: %+v %v", f, err)
	}
	// ChooseRTR follows siw's preference.
	for offered, want := range map[RTRFlags]RTRFlags{
		RTRSend: RTRWrite, RTRRead: RTRRead, RTRWrite: RTRWrite, RTRWrite | RTRRead: RTRWrite,
		RTRSend | RTRRead: RTRRead, 0: RTRWrite, RTRSend | RTRWrite | RTRRead: RTRWrite,
	} {
		if got := ChooseRTR(offered); got != want {
			t.Fatalf("ChooseRTR(%b) = %b, want %b", offered, got, want)
		}
	}
	if MPARequest.String() != "request" || MPAReply.String() != "reply" || MPAKind(0).String() != "invalid" {
		t.Fatal("MPAKind.String")
	}
	if SiwMaxUserPrivateData != 251 {
		t.Fatal("SiwMaxUserPrivateData")
	}
}

func TestMPAParseErrors(t *testing.T) {
	good := hx(t, reqKeyHex+"10 02 00 04 00 01 00 01")
	mod := func(f func(b []byte) []byte) []byte { return f(bytes.Clone(good)) }
	cases := []struct {
		name  string
		in    []byte
		err   error
		wantN int
	}{
		{"empty", nil, ErrShortBuffer, MPAHeaderSize},
		{"19 bytes", good[:19], ErrShortBuffer, MPAHeaderSize},
		{"header only", good[:20], ErrShortBuffer, 24},
		{"23 bytes", good[:23], ErrShortBuffer, 24},
		{"bad key", mod(func(b []byte) []byte { b[9] = 'x'; return b }), ErrMPAKey, 0},
		{"lower-case key", mod(func(b []byte) []byte { b[0] = 'm'; return b }), ErrMPAKey, 0},
		{"revision 0", mod(func(b []byte) []byte { b[17] = 0; return b }), ErrMPARevision, 0},
		{"revision 3", mod(func(b []byte) []byte { b[17] = 3; return b }), ErrMPARevision, 0},
		{"PD 513", mod(func(b []byte) []byte { b[18], b[19] = 0x02, 0x01; return b }), ErrMPAPrivateDataTooLong, 0},
		{"PD 65535", mod(func(b []byte) []byte { b[18], b[19] = 0xff, 0xff; return b }), ErrMPAPrivateDataTooLong, 0},
		{"H without word", mod(func(b []byte) []byte { b[19] = 3; return b[:23] }), ErrMPAEnhancedWord, 0},
		{"H with empty PD", mod(func(b []byte) []byte { b[19] = 0; return b[:20] }), ErrMPAEnhancedWord, 0},
		{"markers", mod(func(b []byte) []byte { b[16] |= 0x80; return b }), ErrMPAMarkers, 24},
	}
	for _, tc := range cases {
		f, n, err := ParseMPAFrame(tc.in)
		if err != tc.err || n != tc.wantN {
			t.Errorf("%s: n %d err %v, want n %d err %v", tc.name, n, err, tc.wantN, tc.err)
		}
		if err == ErrMPAMarkers && (!f.Markers || f.IRD != 1 || f.Kind != MPARequest) {
			t.Errorf("markers frame not decoded: %+v", f)
		}
		if err == ErrMPARevision && (f.Kind != MPARequest || f.Revision != tc.in[17]) {
			t.Errorf("revision error frame: %+v", f)
		}
	}
	// A reply with markers too.
	rep := hx(t, repKeyHex+"c0 01 00 00")
	if f, n, err := ParseMPAFrame(rep); err != ErrMPAMarkers || n != 20 || !f.Markers || !f.CRC || f.Kind != MPAReply {
		t.Errorf("reply with markers: %+v %d %v", f, n, err)
	}
	// 512 bytes of private data are accepted on receive.
	big, err := AppendMPAFrame(nil, &MPAFrame{Kind: MPAReply, Revision: 1, PrivateData: make([]byte, 512)})
	if err != nil {
		t.Fatal(err)
	}
	if _, n, err := ParseMPAFrame(big); err != nil || n != 532 {
		t.Errorf("512-byte PD: %d %v", n, err)
	}
}

func TestMPAEncodeErrors(t *testing.T) {
	cases := []struct {
		name string
		f    MPAFrame
		err  error
	}{
		{"zero kind", MPAFrame{Revision: 2}, ErrMPAKind},
		{"kind 3", MPAFrame{Kind: 3, Revision: 2}, ErrMPAKind},
		{"reject in request", MPAFrame{Kind: MPARequest, Revision: 2, Reject: true}, ErrMPAKind},
		{"revision 0", MPAFrame{Kind: MPARequest}, ErrMPARevision},
		{"revision 3", MPAFrame{Kind: MPARequest, Revision: 3}, ErrMPARevision},
		{"enhanced rev 1", MPAFrame{Kind: MPARequest, Revision: 1, Enhanced: true}, ErrMPARevision},
		{"IRD too big", MPAFrame{Kind: MPARequest, Revision: 2, Enhanced: true, IRD: MaxIRDORD + 1}, ErrMPAIRDORDRange},
		{"ORD too big", MPAFrame{Kind: MPAReply, Revision: 2, Enhanced: true, ORD: 0xffff}, ErrMPAIRDORDRange},
		{"PD 513", MPAFrame{Kind: MPARequest, Revision: 1, PrivateData: make([]byte, 513)}, ErrMPAPrivateDataTooLong},
		{"PD 509 + word", MPAFrame{Kind: MPARequest, Revision: 2, Enhanced: true, PrivateData: make([]byte, 509)}, ErrMPAPrivateDataTooLong},
	}
	for _, tc := range cases {
		dst := []byte{1, 2, 3}
		out, err := AppendMPAFrame(dst, &tc.f)
		if err != tc.err || !bytes.Equal(out, dst) {
			t.Errorf("%s: err %v out %x", tc.name, err, out)
		}
	}
	// IRD/ORD at the maximum are fine and keep the P2P/RTR bits apart.
	f := MPAFrame{Kind: MPARequest, Revision: 2, Enhanced: true, IRD: MaxIRDORD, ORD: MaxIRDORD, PeerToPeer: true, RTR: RTRSend | RTRWrite | RTRRead}
	out, err := AppendMPAFrame(nil, &f)
	if err != nil {
		t.Fatal(err)
	}
	mustEqualBytes(t, "max word", out[20:], hx(t, "ffff ffff"))
	f.PeerToPeer, f.RTR = false, 0
	out, _ = AppendMPAFrame(nil, &f)
	mustEqualBytes(t, "max word without bits", out[20:], hx(t, "3fff 3fff"))
}
