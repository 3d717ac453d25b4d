package iwarp

import (
	"bytes"
	"testing"
)

func TestReadRequest(t *testing.T) {
	r := ReadRequest{SinkSTag: 1, SinkTO: 2, Size: 3, SourceSTag: 4, SourceTO: 5}
	b := AppendReadRequest([]byte{9}, &r)
	mustEqualBytes(t, "read request", b[1:], hx(t, "00000001 0000000000000002 00000003 00000004 0000000000000005"))
	g, err := ParseReadRequest(b[1:])
	if err != nil || g != r {
		t.Fatalf("%+v %v", g, err)
	}
	for _, n := range []int{0, 1, 27, 29, 46} {
		if _, err := ParseReadRequest(make([]byte, n)); err != ErrReadRequestLength {
			t.Errorf("len %d: %v", n, err)
		}
	}
}

func TestTerminateEncodeErrors(t *testing.T) {
	tagged := hx(t, "c1 40 deadbe00 0000000000001000")
	cases := []struct {
		name string
		t    Terminate
	}{
		{"layer 16", Terminate{Layer: 16}},
		{"etype 16", Terminate{EType: 16}},
		{"layout 2", Terminate{Layout: 2}},
		{"tagged header 18 bytes", Terminate{DDPHeader: append(bytes.Clone(tagged), 0, 0, 0, 0)}},
		{"untagged header 14 bytes", Terminate{DDPHeader: append([]byte{0x41}, tagged[1:]...)}},
		{"RDMAP header 27 bytes", Terminate{RDMAPHeader: make([]byte, 27)}},
	}
	for _, tc := range cases {
		dst := []byte{7}
		out, err := AppendTerminate(dst, &tc.t)
		if err != ErrTerminateHeader || !bytes.Equal(out, dst) {
			t.Errorf("%s: %v", tc.name, err)
		}
		if _, err := AppendTerminateFPDU(nil, 1, &tc.t, false); err != ErrTerminateHeader {
			t.Errorf("%s FPDU: %v", tc.name, err)
		}
	}
}

func TestTerminateParse(t *testing.T) {
	untagged := hx(t, "41 41 00000000 00000001 00000001 00000000")
	rr := make([]byte, ReadRequestSize)
	cases := []struct {
		name string
		in   []byte
		err  error
	}{
		{"empty", nil, ErrTerminateLength},
		{"3 bytes", hx(t, "12 02 c0"), ErrTerminateLength},
		{"D without length", hx(t, "12 02 40 00"), ErrTerminateLength},
		{"D with length only", hx(t, "12 02 40 00 0012"), ErrTerminateLength},
		{"D untagged 17 bytes", cat(hx(t, "12 02 40 00 0012"), untagged[:17]), ErrTerminateLength},
		{"R short", cat(hx(t, "01 00 e0 00 002e"), untagged, rr[:27]), ErrTerminateLength},
		{"R only short", cat(hx(t, "01 00 20 00"), rr[:10]), ErrTerminateLength},
		{"siw D short", hx(t, "21 02 03 00 0012 41"), ErrTerminateLength},
		{"control only", hx(t, "02 07 00 00"), nil},
		{"M only", hx(t, "02 07 80 00"), nil},
		{"R only", cat(hx(t, "01 00 20 00"), rr), nil},
		{"trailing bytes", cat(hx(t, "02 07 00 00"), rr), nil},
	}
	for _, tc := range cases {
		term, err := ParseTerminate(tc.in)
		if err != tc.err {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.err)
		}
		if err == nil {
			out, err := AppendTerminate(nil, &term)
			if err != nil {
				t.Fatalf("%s: re-encode %v", tc.name, err)
			}
			if n := term.Len(); n != len(out) {
				t.Fatalf("%s: Len %d wrote %d", tc.name, n, len(out))
			}
		}
	}
	// A flagless siw LLP terminate is recognised by its nibble order only
	// when the RFC reading gives an impossible layer.
	term, _ := ParseTerminate(hx(t, "32 07 00 00")) // siw: layer 2 (LLP), etype 3
	if term.Layout != TermLayoutSiw || term.Layer != TermLayerLLP || term.EType != 3 {
		t.Errorf("flagless siw: %+v", term)
	}
	term, _ = ParseTerminate(hx(t, "20 06 00 00")) // RFC: LLP/MPA insufficient IRD
	if term.Layout != TermLayoutRFC || term.Layer != TermLayerLLP || term.EType != TermLLPMPA || term.Code != TermCodeInsufficientIRD {
		t.Errorf("flagless RFC: %+v", term)
	}
	// RFC-layout terminate for a Read Request built with SetOffending.
	seg := cat(untagged, rr)
	t2 := Terminate{Layer: TermLayerRDMAP, EType: TermRDMAPRemoteProtection, Code: TermCodeInvalidSTag}
	t2.SetOffending(seg)
	out, err := AppendTerminateFPDU(nil, 1, &t2, true)
	if err != nil {
		t.Fatal(err)
	}
	ulpdu, _, err := ParseFPDU(out, true)
	if err != nil {
		t.Fatal(err)
	}
	s, err := ParseSegment(ulpdu)
	if err != nil || s.Opcode != OpTerminate || s.QN != QNTerminate || s.MSN != 1 || s.MO != 0 || !s.Last {
		t.Fatalf("terminate segment %+v %v", s.SegmentHeader, err)
	}
	mustEqualBytes(t, "control", s.Payload[:6], hx(t, "01 00 e0 00 002e"))
	g, err := ParseTerminate(s.Payload)
	if err != nil || !bytes.Equal(g.DDPHeader, untagged) || !bytes.Equal(g.RDMAPHeader, rr) || g.SegmentLength != 46 {
		t.Fatalf("%+v %v", g, err)
	}
	// SetOffending on truncated input.
	var t3 Terminate
	t3.SetOffending(nil)
	if !t3.SegmentLengthValid || t3.SegmentLength != 0 || t3.DDPHeader != nil {
		t.Errorf("empty offending %+v", t3)
	}
	t3.SetOffending(untagged[:10])
	if t3.SegmentLength != 10 || t3.DDPHeader != nil {
		t.Errorf("short offending %+v", t3)
	}
	t3.SetOffending(untagged) // Read Request header without its body
	if len(t3.DDPHeader) != 18 || t3.RDMAPHeader != nil {
		t.Errorf("read request without body %+v", t3)
	}
}
