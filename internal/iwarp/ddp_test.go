package iwarp

import (
	"bytes"
	"math"
	"testing"
)

func allOpcodes() []Opcode {
	return []Opcode{OpWrite, OpReadRequest, OpReadResponse, OpSend, OpSendInvalidate, OpSendSE, OpSendSEInvalidate, OpTerminate}
}

func TestSegmentHeaderRoundTrip(t *testing.T) {
	for _, op := range allOpcodes() {
		for _, last := range []bool{false, true} {
			h := SegmentHeader{Opcode: op, Last: last}
			if op.Tagged() {
				h.STag, h.TO = 0x12345678, 0xfedcba9876543210
			} else {
				h.QN, h.MSN, h.MO = op.QN(), 0xffffffff, 0x80000001
				if op.Invalidates() {
					h.InvalidateSTag = 0xabcdef01
				}
			}
			b, err := AppendSegmentHeader(nil, &h)
			if err != nil || len(b) != h.Len() {
				t.Fatalf("%v: len %d err %v", op, len(b), err)
			}
			g, n, err := ParseSegmentHeader(b)
			if err != nil || n != len(b) || g != h {
				t.Fatalf("%v: %+v n %d err %v", op, g, n, err)
			}
			seg, err := ParseSegment(append(b, 1, 2, 3))
			if err != nil || seg.SegmentHeader != h || !bytes.Equal(seg.Payload, []byte{1, 2, 3}) {
				t.Fatalf("%v: ParseSegment %+v %v", op, seg, err)
			}
		}
	}
	// Fields of the other buffer model are not encoded.
	h := SegmentHeader{Opcode: OpWrite, STag: 5, TO: 6, QN: 7, MSN: 8, MO: 9, InvalidateSTag: 10}
	b, _ := AppendSegmentHeader(nil, &h)
	g, _, _ := ParseSegmentHeader(b)
	if g != (SegmentHeader{Opcode: OpWrite, STag: 5, TO: 6}) {
		t.Fatalf("cross-model fields leaked: %+v", g)
	}
}

func TestOpcodeMethods(t *testing.T) {
	names := []string{"Write", "ReadRequest", "ReadResponse", "Send", "SendInvalidate", "SendSE", "SendSEInvalidate", "Terminate"}
	for i, op := range allOpcodes() {
		if op.String() != names[i] || !op.Valid() {
			t.Errorf("%d: %q", op, op.String())
		}
		if op.Tagged() != (op == OpWrite || op == OpReadResponse) {
			t.Errorf("%v tagged", op)
		}
		if op.Invalidates() != (op == 4 || op == 6) {
			t.Errorf("%v invalidates", op)
		}
	}
	if Opcode(8).Valid() || Opcode(8).String() != "Opcode(invalid)" {
		t.Error("opcode 8")
	}
}

func TestParseSegmentErrors(t *testing.T) {
	cases := []struct {
		name string
		in   []byte
		err  error
	}{
		{"empty", nil, ErrSegmentLength},
		{"tagged 13", hx(t, "c1 40 00000001 00000000000000"), ErrSegmentLength},
		{"untagged 17", hx(t, "41 43 00000000 00000000 00000001 000000"), ErrSegmentLength},
		{"DDP version 3", hx(t, "43 43 00000000 00000000 00000001 00000000"), ErrDDPVersion},
		{"RDMAP version 2", hx(t, "41 83 00000000 00000000 00000001 00000000"), ErrRDMAPVersion},
		{"opcode 10 (atomic)", hx(t, "41 4a 00000000 00000000 00000001 00000000"), ErrOpcode},
		{"Read Response untagged", hx(t, "41 42 00000000 00000000 00000001 00000000"), ErrOpcode},
		{"Read Request tagged", hx(t, "c1 41 00000001 0000000000000000"), ErrOpcode},
	}
	for _, tc := range cases {
		_, err := ParseSegment(tc.in)
		if err != tc.err {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.err)
		}
	}
	if _, err := AppendSegmentHeader(nil, &SegmentHeader{Opcode: 9}); err != ErrOpcode {
		t.Errorf("encode opcode 9: %v", err)
	}
	if _, n, err := ParseSegmentHeader(nil); err != ErrShortBuffer || n != TaggedHeaderSize {
		t.Errorf("empty header: %d %v", n, err)
	}
	if _, n, err := ParseSegmentHeader([]byte{0x41}); err != ErrShortBuffer || n != UntaggedHeaderSize {
		t.Errorf("untagged first byte: %d %v", n, err)
	}
}

func TestSegmentPayloadLimit(t *testing.T) {
	cases := []struct {
		fpdu   int
		tagged bool
		want   int
	}{
		{20, true, 0}, {23, true, 0}, {24, true, 4}, {27, true, 4}, {28, true, 8},
		{24, false, 0}, {28, false, 4}, {1448, true, 1428}, {1448, false, 1424},
		{65480, true, 65460}, {1 << 20, true, 65520}, {1 << 20, false, 65516}, {0, true, 0}, {-5, false, 0},
	}
	for _, tc := range cases {
		got := SegmentPayloadLimit(tc.fpdu, tc.tagged)
		if got != tc.want {
			t.Errorf("limit(%d, %v) = %d, want %d", tc.fpdu, tc.tagged, got, tc.want)
		}
		if got > 0 {
			hl := UntaggedHeaderSize
			if tc.tagged {
				hl = TaggedHeaderSize
			}
			if FPDUSize(hl+got) > tc.fpdu || hl+got > MaxULPDULength {
				t.Errorf("limit(%d) = %d does not fit", tc.fpdu, got)
			}
			if FPDUSize(hl+got+4) <= tc.fpdu && hl+got+4 <= MaxULPDULength {
				t.Errorf("limit(%d) = %d is not the largest", tc.fpdu, got)
			}
		}
	}
}

// segmentAll runs a Segmenter, builds every FPDU, parses it back, feeds a
// Reassembler and returns the reassembled message.
func segmentAll(t *testing.T, first SegmentHeader, msg []byte, maxPayload int, rx *Reassembler) []byte {
	t.Helper()
	s, err := NewSegmenter(first, len(msg), maxPayload)
	if err != nil {
		t.Fatalf("NewSegmenter(len %d, max %d): %v", len(msg), maxPayload, err)
	}
	want := s.Count()
	var out []byte
	var wire []byte
	count := 0
	for {
		h, off, n, ok := s.Next()
		if !ok {
			break
		}
		count++
		if n > maxPayload || off != len(out) || h.Last != (off+n == len(msg)) {
			t.Fatalf("segment %d: off %d n %d last %v", count, off, n, h.Last)
		}
		if !h.Last && n != maxPayload {
			t.Fatalf("short non-last segment %d", n)
		}
		if h.Tagged() {
			if h.STag != first.STag || h.TO != first.TO+uint64(off) {
				t.Fatalf("tagged addressing %+v off %d", h, off)
			}
		} else if h.MO != uint32(off) || h.MSN != first.MSN || h.QN != first.QN || h.InvalidateSTag != first.InvalidateSTag {
			t.Fatalf("untagged addressing %+v off %d", h, off)
		}
		wire, err = AppendFPDUSegment(wire[:0], &h, msg[off:off+n], true)
		if err != nil {
			t.Fatal(err)
		}
		ulpdu, m, err := ParseFPDU(wire, true)
		if err != nil || m != len(wire) {
			t.Fatalf("parse: %v", err)
		}
		seg, err := ParseSegment(ulpdu)
		if err != nil || seg.SegmentHeader != h {
			t.Fatalf("segment %+v %v", seg.SegmentHeader, err)
		}
		isFirst, err := rx.Accept(&seg.SegmentHeader, len(seg.Payload))
		if err != nil || isFirst != (count == 1) {
			t.Fatalf("reassembler: first %v err %v", isFirst, err)
		}
		out = append(out, seg.Payload...)
	}
	if count != want {
		t.Fatalf("Count %d, produced %d", want, count)
	}
	if _, _, _, ok := s.Next(); ok {
		t.Fatal("Next after last")
	}
	return out
}

func TestSegmentationReassembly(t *testing.T) {
	lengths := []int{0, 1, 2, 3, 4, 5, 7, 8, 15, 16, 17, 100, 1427, 1428, 1429, 2856, 2857, 4096, 65516, 65517, 65520, 65521, 200000}
	sizes := []int{1, 3, 4, 7, 23, 1428, 1424, 65516, 65520}
	for _, maxP := range sizes {
		rxS, rxW := &Reassembler{}, &Reassembler{}
		msn := uint32(1)
		for _, l := range lengths {
			msg := make([]byte, l)
			for i := range msg {
				msg[i] = byte(i ^ i>>8 ^ l)
			}
			if l > 70000 && maxP < 23 {
				continue
			}
			// Untagged Send with Invalidate.
			first := SegmentHeader{Opcode: OpSendInvalidate, QN: QNSend, MSN: msn, InvalidateSTag: 0x1100, MO: 77, Last: true}
			if maxP <= MaxULPDULength-UntaggedHeaderSize {
				got := segmentAll(t, first, msg, maxP, rxS)
				if !bytes.Equal(got, msg) {
					t.Fatalf("send len %d max %d: payload differs", l, maxP)
				}
				msn++
				if rxS.NextMSN(QNSend) != msn {
					t.Fatalf("NextMSN %d want %d", rxS.NextMSN(QNSend), msn)
				}
			}
			// Tagged Write near the top of the TO space.
			w := SegmentHeader{Opcode: OpWrite, STag: 0xabc00, TO: math.MaxUint64 - uint64(l) + 1}
			got := segmentAll(t, w, msg, maxP, rxW)
			if !bytes.Equal(got, msg) {
				t.Fatalf("write len %d max %d: payload differs", l, maxP)
			}
		}
	}
}

func TestSegmenterErrors(t *testing.T) {
	send := SegmentHeader{Opcode: OpSend, MSN: 1}
	cases := []struct {
		name string
		h    SegmentHeader
		l, m int
		err  error
	}{
		{"bad opcode", SegmentHeader{Opcode: 11}, 1, 1, ErrOpcode},
		{"send on QN 1", SegmentHeader{Opcode: OpSend, QN: 1}, 1, 1, ErrInvalidQN},
		{"max 0", send, 1, 0, ErrSegmentSize},
		{"max too big", send, 1, MaxULPDULength - UntaggedHeaderSize + 1, ErrSegmentSize},
		{"negative length", send, -1, 4, ErrMessageTooLong},
		{"MO overflow", send, math.MaxUint32 + 1, 65516, ErrMessageTooLong},
		{"TO wrap", SegmentHeader{Opcode: OpReadResponse, TO: math.MaxUint64 - 9}, 11, 4, ErrTOWrap},
		{"segmented read request", SegmentHeader{Opcode: OpReadRequest, QN: 1, MSN: 1}, ReadRequestSize, 27, ErrSegmentSize},
		{"segmented terminate", SegmentHeader{Opcode: OpTerminate, QN: 2, MSN: 1}, 40, 20, ErrSegmentSize},
	}
	for _, tc := range cases {
		if _, err := NewSegmenter(tc.h, tc.l, tc.m); err != tc.err {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.err)
		}
	}
	if _, err := NewSegmenter(SegmentHeader{Opcode: OpReadResponse, TO: math.MaxUint64 - 9}, 10, 4); err != nil {
		t.Errorf("TO up to the last byte: %v", err)
	}
	if _, err := NewSegmenter(send, math.MaxUint32, 65516); err != nil {
		t.Errorf("4 GiB - 1 send: %v", err)
	}
}

func TestReassemblerErrors(t *testing.T) {
	send := func(msn, mo uint32, last bool) SegmentHeader {
		return SegmentHeader{Opcode: OpSend, QN: QNSend, MSN: msn, MO: mo, Last: last}
	}
	var r Reassembler
	step := func(name string, h SegmentHeader, n int, want error) {
		t.Helper()
		before := r
		_, err := r.Accept(&h, n)
		if err != want {
			t.Fatalf("%s: %v, want %v", name, err, want)
		}
		if err != nil && r != before {
			t.Fatalf("%s: state changed on error", name)
		}
	}
	step("MSN 0", send(0, 0, true), 4, ErrInvalidMSN)
	step("MSN 2 first", send(2, 0, true), 4, ErrInvalidMSN)
	step("MO 4 first", send(1, 4, true), 4, ErrInvalidMO)
	step("QN 1 send", SegmentHeader{Opcode: OpSend, QN: 1, MSN: 1}, 4, ErrInvalidQN)
	step("QN 3", SegmentHeader{Opcode: OpSendSE, QN: 3, MSN: 1}, 4, ErrInvalidQN)
	step("read request on QN 0", SegmentHeader{Opcode: OpReadRequest, QN: 0, MSN: 1, Last: true}, 28, ErrInvalidQN)
	step("negative", send(1, 0, true), -1, ErrSegmentLength)
	step("bad opcode", SegmentHeader{Opcode: 12}, 0, ErrOpcode)
	step("first segment", send(1, 0, false), 8, nil)
	step("wrong MO", send(1, 4, false), 8, ErrInvalidMO)
	step("wrong MSN", send(2, 8, false), 8, ErrInvalidMSN)
	step("other opcode", SegmentHeader{Opcode: OpSendSE, QN: 0, MSN: 1, MO: 8}, 8, ErrInterleaved)
	step("interleaved read request", SegmentHeader{Opcode: OpReadRequest, QN: 1, MSN: 1, Last: true}, 28, ErrInterleaved)
	// A tagged message may interleave with an untagged one.
	step("write during send", SegmentHeader{Opcode: OpWrite, STag: 7, TO: 100}, 10, nil)
	step("last of send", send(1, 8, true), 3, nil)
	step("read response during write", SegmentHeader{Opcode: OpReadResponse, STag: 7, TO: 110}, 1, ErrInterleaved)
	step("write other STag", SegmentHeader{Opcode: OpWrite, STag: 8, TO: 110}, 1, ErrTaggedContinuation)
	step("write gap", SegmentHeader{Opcode: OpWrite, STag: 7, TO: 111}, 1, ErrTaggedContinuation)
	step("write end", SegmentHeader{Opcode: OpWrite, STag: 7, TO: 110, Last: true}, 0, nil)
	step("next send MSN 2", send(2, 0, true), 0, nil)
	step("read request MSN 1", SegmentHeader{Opcode: OpReadRequest, QN: 1, MSN: 1, Last: true}, 28, nil)
	step("terminate MSN 1", SegmentHeader{Opcode: OpTerminate, QN: 2, MSN: 1, Last: true}, 24, nil)
	if r.NextMSN(0) != 3 || r.NextMSN(1) != 2 || r.NextMSN(2) != 2 || r.NextMSN(3) != 0 {
		t.Fatalf("NextMSN %d %d %d", r.NextMSN(0), r.NextMSN(1), r.NextMSN(2))
	}
	step("TO wrap", SegmentHeader{Opcode: OpWrite, TO: math.MaxUint64, Last: true}, 2, ErrTOWrap)
	step("TO last byte", SegmentHeader{Opcode: OpWrite, TO: math.MaxUint64, Last: true}, 1, nil)
	step("TO ends at 2^64 but not last", SegmentHeader{Opcode: OpWrite, TO: math.MaxUint64}, 1, ErrTOWrap)
	step("MO overflow", SegmentHeader{Opcode: OpSend, MSN: 3}, math.MaxUint32+1, ErrMessageTooLong)
	step("MO max message", SegmentHeader{Opcode: OpSend, MSN: 3, Last: true}, math.MaxUint32, nil)
}
