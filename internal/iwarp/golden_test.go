package iwarp

import (
	"bytes"
	"encoding/binary"
	"testing"
)

// Golden frames and vectors from the siw wire notes (iwarp.md).

const (
	reqKeyHex = "4d504120494420526571204672616d65"
	repKeyHex = "4d504120494420526570204672616d65"
)

func TestGoldenMPAKeys(t *testing.T) {
	mustEqualBytes(t, "request key", []byte("MPA ID Req Frame"), hx(t, reqKeyHex))
	mustEqualBytes(t, "reply key", []byte("MPA ID Rep Frame"), hx(t, repKeyHex))
}

func TestGoldenMPAFrames(t *testing.T) {
	cases := []struct {
		name string
		wire string
		want MPAFrame
	}{
		{"siw initiator rping", reqKeyHex + "10 02 00 04 | 00 01 00 01",
			MPAFrame{Kind: MPARequest, Revision: 2, Enhanced: true, IRD: 1, ORD: 1}},
		{"siw responder rping", repKeyHex + "10 02 00 04 | 00 01 00 01",
			MPAFrame{Kind: MPAReply, Revision: 2, Enhanced: true, IRD: 1, ORD: 1}},
		{"perftest control", reqKeyHex + "10 02 00 04 | 00 00 00 00",
			MPAFrame{Kind: MPARequest, Revision: 2, Enhanced: true}},
		{"ib_read_bw data", reqKeyHex + "10 02 00 04 | 00 80 00 80",
			MPAFrame{Kind: MPARequest, Revision: 2, Enhanced: true, IRD: 128, ORD: 128}},
		{"siw P2P reply choosing Write RTR", repKeyHex + "10 02 00 04 | 80 01 80 01",
			MPAFrame{Kind: MPAReply, Revision: 2, Enhanced: true, IRD: 1, ORD: 1, PeerToPeer: true, RTR: RTRWrite}},
		{"reject with private data", repKeyHex + "30 02 00 0b 00 01 00 01" + "676f2061776179",
			MPAFrame{Kind: MPAReply, Revision: 2, Reject: true, Enhanced: true, IRD: 1, ORD: 1, PrivateData: []byte("go away")}},
		{"appendix A request", reqKeyHex + "50 02 0004 0001 0001",
			MPAFrame{Kind: MPARequest, Revision: 2, CRC: true, Enhanced: true, IRD: 1, ORD: 1}},
		{"appendix A reply", repKeyHex + "50 02 0004 0001 0001",
			MPAFrame{Kind: MPAReply, Revision: 2, CRC: true, Enhanced: true, IRD: 1, ORD: 1}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			wire := hx(t, tc.wire)
			f, n, err := ParseMPAFrame(wire)
			if err != nil || n != len(wire) {
				t.Fatalf("ParseMPAFrame = n %d err %v, want n %d", n, err, len(wire))
			}
			assertMPAFrame(t, f, tc.want)
			out, err := AppendMPAFrame(nil, &f)
			if err != nil {
				t.Fatal(err)
			}
			mustEqualBytes(t, "re-encoded", out, wire)
			out, err = AppendMPAFrame(nil, &tc.want)
			if err != nil {
				t.Fatal(err)
			}
			mustEqualBytes(t, "encoded from want", out, wire)
		})
	}
}

func assertMPAFrame(t *testing.T, got, want MPAFrame) {
	t.Helper()
	if !mpaEqual(got, want) {
		t.Fatalf("frame\n got %+v\nwant %+v", got, want)
	}
}

func TestGoldenCRCVectors(t *testing.T) {
	cases := []struct {
		name, fpdu, crc string
	}{
		{"write RTR", "00 0e c1 40 00 00 00 01 00 00 00 00 00 00 00 00", "eb d3 4c 5f"},
		{"siw 16-zero Send MSN 1", "00 22 41 43 00000000 00000000 00000001 00000000" + "00000000000000000000000000000000", "84 60 9a 12"},
		{"rping info Send", "00 22 41 43 00000000 00000000 00000001 00000000 00000000 00100000 0a0b0c00 00000064", "67 80 ce 1d"},
		{"iSCSI 32 zero bytes", "0000000000000000000000000000000000000000000000000000000000000000", "aa 36 91 8a"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := hx(t, tc.fpdu)
			var wire [4]byte
			binary.LittleEndian.PutUint32(wire[:], ChecksumCRC(b))
			mustEqualBytes(t, "crc", wire[:], hx(t, tc.crc))
			// Incremental over arbitrary splits gives the same value.
			for cut := 0; cut <= len(b); cut++ {
				if UpdateCRC(UpdateCRC(0, b[:cut]), b[cut:]) != ChecksumCRC(b) {
					t.Fatalf("split at %d differs", cut)
				}
			}
		})
	}
	if ChecksumCRC(make([]byte, 32)) != 0x8A9136AA {
		t.Fatal("iSCSI vector value")
	}
}

// goldenFPDU is one captured FPDU with its expected decoding.
type goldenFPDU struct {
	name    string
	wire    string
	crcOn   bool
	hdr     SegmentHeader
	payload []byte // nil means: check length only via payloadLen
}

func checkGoldenFPDU(t *testing.T, g goldenFPDU) {
	t.Helper()
	wire := hx(t, g.wire)
	ulpdu, n, err := ParseFPDU(wire, g.crcOn)
	if err != nil || n != len(wire) {
		t.Fatalf("ParseFPDU: n %d err %v (len %d)", n, err, len(wire))
	}
	seg, err := ParseSegment(ulpdu)
	if err != nil {
		t.Fatalf("ParseSegment: %v", err)
	}
	if seg.SegmentHeader != g.hdr {
		t.Fatalf("header\n got %+v\nwant %+v", seg.SegmentHeader, g.hdr)
	}
	if g.payload != nil {
		mustEqualBytes(t, "payload", seg.Payload, g.payload)
	}
	// Streaming view: header first, payload, then trailer.
	fh, hn, err := ParseFPDUHeader(wire[:MinFPDUHeaderSize])
	if !g.hdr.Tagged() {
		if err != ErrShortBuffer || hn != 20 {
			t.Fatalf("untagged header from 16 bytes: n %d err %v", hn, err)
		}
		fh, hn, err = ParseFPDUHeader(wire[:hn])
	}
	if err != nil || fh.SegmentHeader != g.hdr || fh.Size() != len(wire) || fh.HeaderLen() != hn {
		t.Fatalf("ParseFPDUHeader: %+v n %d err %v", fh, hn, err)
	}
	crc := UpdateCRC(0, wire[:hn])
	crc = UpdateCRC(crc, wire[hn:hn+fh.PayloadLen()])
	tr := wire[hn+fh.PayloadLen():]
	if len(tr) != fh.TrailerLen() {
		t.Fatalf("trailer len %d want %d", len(tr), fh.TrailerLen())
	}
	if err := CheckFPDUTrailer(tr, fh.ULPDULength, crc, g.crcOn); err != nil {
		t.Fatalf("CheckFPDUTrailer: %v", err)
	}
	// Re-encode in one piece and as header/payload/trailer.
	out, err := AppendFPDUSegment(nil, &g.hdr, seg.Payload, g.crcOn)
	if err != nil {
		t.Fatal(err)
	}
	mustEqualBytes(t, "AppendFPDUSegment", out, wire)
	out, err = AppendFPDU(nil, ulpdu, g.crcOn)
	if err != nil {
		t.Fatal(err)
	}
	mustEqualBytes(t, "AppendFPDU", out, wire)
	hb, err := AppendFPDUHeader(nil, &g.hdr, len(seg.Payload))
	if err != nil {
		t.Fatal(err)
	}
	c := UpdateCRC(UpdateCRC(0, hb), seg.Payload)
	out = AppendFPDUTrailer(cat(hb, seg.Payload), g.hdr.Len()+len(seg.Payload), c, g.crcOn)
	mustEqualBytes(t, "gathered", out, wire)
}

func TestGoldenRpingFirstSendCRCOff(t *testing.T) {
	checkGoldenFPDU(t, goldenFPDU{
		name: "siw rping client first Send",
		wire: `00 22 41 43 00 00 00 00 00 00 00 00 00 00 00 01 00 00 00 00
		       00 00 56 22 d6 ed 84 50 ec 8f d2 00 00 00 00 64
		       00 00 00 00`,
		hdr:     SegmentHeader{Opcode: OpSend, Last: true, QN: 0, MSN: 1},
		payload: hx(t, "00 00 56 22 d6 ed 84 50 ec 8f d2 00 00 00 00 64"),
	})
	// With CRC off the received CRC field is ignored.
	wire := hx(t, "00 22 41 43 00000000 00000000 00000001 00000000 00005622d6ed8450ec8fd20000000064 deadbeef")
	if _, _, err := ParseFPDU(wire, false); err != nil {
		t.Fatalf("CRC off must ignore the field: %v", err)
	}
	if _, _, err := ParseFPDU(wire, true); err != ErrFPDUCRC {
		t.Fatalf("CRC on: %v", err)
	}
}

func TestGoldenControlBytes(t *testing.T) {
	cases := []struct {
		op            Opcode
		last, notLast string
		hdrWithLen    int
		qn            uint32
	}{
		{OpWrite, "c1 40", "81 40", 16, 0},
		{OpReadRequest, "41 41", "", 20, 1}, // + 28-byte body = 48
		{OpReadResponse, "c1 42", "81 42", 16, 0},
		{OpSend, "41 43", "01 43", 20, 0},
		{OpSendInvalidate, "41 44", "01 44", 20, 0},
		{OpSendSE, "41 45", "01 45", 20, 0},
		{OpSendSEInvalidate, "41 46", "01 46", 20, 0},
		{OpTerminate, "41 47", "", 20, 2},
	}
	for _, tc := range cases {
		h := SegmentHeader{Opcode: tc.op, Last: true}
		if !tc.op.Tagged() {
			h.QN = tc.qn
			if tc.op.QN() != tc.qn {
				t.Fatalf("%v QN %d", tc.op, tc.op.QN())
			}
		}
		b, err := AppendFPDUHeader(nil, &h, 0)
		if err != nil || len(b) != tc.hdrWithLen {
			t.Fatalf("%v: len %d err %v", tc.op, len(b), err)
		}
		mustEqualBytes(t, tc.op.String()+" last", b[2:4], hx(t, tc.last))
		if tc.notLast != "" {
			h.Last = false
			b, _ = AppendFPDUHeader(nil, &h, 0)
			mustEqualBytes(t, tc.op.String()+" not last", b[2:4], hx(t, tc.notLast))
		}
	}
}

func TestGoldenRTRFrames(t *testing.T) {
	cases := []struct {
		typ   RTRFlags
		crcOn bool
		wire  string
		hdr   SegmentHeader
		body  []byte
	}{
		{RTRWrite, false, "00 0e c1 40 00 00 00 01 00 00 00 00 00 00 00 00 | 00 00 00 00",
			SegmentHeader{Opcode: OpWrite, Last: true, STag: 1}, []byte{}},
		{RTRWrite, true, "00 0e c1 40 00 00 00 01 00 00 00 00 00 00 00 00 | eb d3 4c 5f",
			SegmentHeader{Opcode: OpWrite, Last: true, STag: 1}, []byte{}},
		{RTRRead, false, "00 2e 41 41 | 00000000 | 00000001 | 00000001 | 00000000 | 00000000 | 0000000000000000 | 00000000 | 00000001 | 0000000000000000 | 00000000",
			SegmentHeader{Opcode: OpReadRequest, Last: true, QN: 1, MSN: 1}, nil},
		{RTRSend, false, "00 12 41 43 00000000 00000000 00000001 00000000 | 00000000",
			SegmentHeader{Opcode: OpSend, Last: true, QN: 0, MSN: 1}, []byte{}},
	}
	for _, tc := range cases {
		wire := hx(t, tc.wire)
		checkGoldenFPDU(t, goldenFPDU{wire: tc.wire, crcOn: tc.crcOn, hdr: tc.hdr, payload: tc.body})
		out, err := AppendRTR(nil, tc.typ, tc.crcOn)
		if err != nil {
			t.Fatal(err)
		}
		mustEqualBytes(t, "AppendRTR", out, wire)
		if tc.typ == RTRRead {
			ulpdu, _, _ := ParseFPDU(wire, false)
			seg, _ := ParseSegment(ulpdu)
			rr, err := ParseReadRequest(seg.Payload)
			if err != nil || rr != (ReadRequest{SourceSTag: 1}) {
				t.Fatalf("read RTR body %+v %v", rr, err)
			}
		}
	}
	// siw's answer to a Read RTR: zero-length Read Response to STag 0, TO 0.
	checkGoldenFPDU(t, goldenFPDU{wire: "00 0e c1 42 00000000 0000000000000000 | 00000000",
		hdr: SegmentHeader{Opcode: OpReadResponse, Last: true}, payload: []byte{}})
	if _, err := AppendRTR(nil, RTRWrite|RTRRead, false); err != ErrRTRType {
		t.Fatalf("two RTR types: %v", err)
	}
	if _, err := AppendRTR(nil, 0, false); err != ErrRTRType {
		t.Fatalf("no RTR type: %v", err)
	}
}

func TestGoldenSiwReadRequest(t *testing.T) {
	wire := "00 2e 41 41 00000000 00000001 00000001 00000000 d41e2c00 0000556205595db0 00000064 ec8fd200 00005622d6ed8450 | 00000000"
	body := hx(t, "d41e2c00 0000556205595db0 00000064 ec8fd200 00005622d6ed8450")
	checkGoldenFPDU(t, goldenFPDU{wire: wire, hdr: SegmentHeader{Opcode: OpReadRequest, Last: true, QN: 1, MSN: 1}, payload: body})
	rr, err := ParseReadRequest(body)
	want := ReadRequest{SinkSTag: 0xd41e2c00, SinkTO: 0x0000556205595db0, Size: 100, SourceSTag: 0xec8fd200, SourceTO: 0x00005622d6ed8450}
	if err != nil || rr != want {
		t.Fatalf("ParseReadRequest %+v %v", rr, err)
	}
	mustEqualBytes(t, "AppendReadRequest", AppendReadRequest(nil, &rr), body)

	// The client's answer header.
	resp := hx(t, "00 72 c1 42 d41e2c00 0000556205595db0")
	fh, n, err := ParseFPDUHeader(resp)
	wantH := SegmentHeader{Opcode: OpReadResponse, Last: true, STag: 0xd41e2c00, TO: 0x0000556205595db0}
	if err != nil || n != 16 || fh.SegmentHeader != wantH || fh.PayloadLen() != 100 || fh.TrailerLen() != 4 {
		t.Fatalf("read response header %+v n %d err %v", fh, n, err)
	}
	hb, _ := AppendFPDUHeader(nil, &wantH, 100)
	mustEqualBytes(t, "read response header", hb, resp)
}

func TestGoldenTerminateExample(t *testing.T) {
	wire := "00 26 41 47 00000000 00000002 00000001 00000000 | 11 00 03 00 | 00 0c | c1 40 deadbe00 0000000000001000 | 00000000"
	body := hx(t, "11 00 03 00 | 00 0c | c1 40 deadbe00 0000000000001000")
	checkGoldenFPDU(t, goldenFPDU{wire: wire, hdr: SegmentHeader{Opcode: OpTerminate, Last: true, QN: 2, MSN: 1}, payload: body})
	term, err := ParseTerminate(body)
	if err != nil {
		t.Fatal(err)
	}
	if term.Layout != TermLayoutSiw || term.Layer != TermLayerDDP || term.EType != TermDDPTagged ||
		term.Code != TermCodeDDPInvalidSTag || !term.SegmentLengthValid || term.SegmentLength != 12 ||
		term.RDMAPHeader != nil {
		t.Fatalf("terminate %+v", term)
	}
	mustEqualBytes(t, "copied header", term.DDPHeader, hx(t, "c1 40 deadbe00 0000000000001000"))
	copied, n, err := ParseSegmentHeader(term.DDPHeader)
	if err != nil || n != 14 || copied != (SegmentHeader{Opcode: OpWrite, Last: true, STag: 0xdeadbe00, TO: 0x1000}) {
		t.Fatalf("copied header %+v %v", copied, err)
	}
	out, err := AppendTerminate(nil, &term)
	if err != nil {
		t.Fatal(err)
	}
	mustEqualBytes(t, "re-encoded siw terminate", out, body)
	out, err = AppendTerminateFPDU(nil, 1, &term, false)
	if err != nil {
		t.Fatal(err)
	}
	mustEqualBytes(t, "terminate FPDU", out, hx(t, wire))

	// Built from the offending segment with SetOffending.
	offending := hx(t, "c1 40 deadbe00 0000000000001000")
	var t2 Terminate
	t2.Layer, t2.EType, t2.Code, t2.Layout = TermLayerDDP, TermDDPTagged, TermCodeDDPInvalidSTag, TermLayoutSiw
	t2.SetOffending(offending)
	if t2.SegmentLength != 14 || len(t2.DDPHeader) != 14 || t2.RDMAPHeader != nil {
		t.Fatalf("SetOffending %+v", t2)
	}
	t2.SegmentLength = 12 // the length siw reported in the capture
	out, _ = AppendTerminate(nil, &t2)
	mustEqualBytes(t, "SetOffending", out, body)
}

func TestGoldenSiwTerminateControlWords(t *testing.T) {
	ddpTagged := hx(t, "c1 40 deadbe00 0000000000001000")
	ddpUntagged := hx(t, "41 43 00000000 00000000 00000001 00000000")
	ddpRead := hx(t, "41 41 00000000 00000001 00000001 00000000")
	rdmapRead := make([]byte, ReadRequestSize)
	cases := []struct {
		name     string
		siw, rfc string
		layer    TermLayer
		etype    TermEType
		code     TermCode
		d        []byte
		r        []byte
	}{
		{"write to unknown STag", "11 00 03 00", "11 00 c0 00", TermLayerDDP, TermDDPTagged, TermCodeDDPInvalidSTag, ddpTagged, nil},
		{"send too big", "21 02 03 00", "12 02 c0 00", TermLayerDDP, TermDDPUntagged, TermCodeInvalidMSNNoBuffer, ddpUntagged, nil},
		{"read bad source STag", "10 00 07 00", "01 00 e0 00", TermLayerRDMAP, TermRDMAPRemoteProtection, TermCodeInvalidSTag, ddpRead, rdmapRead},
		{"read with IRD 0", "20 07 03 00", "02 07 c0 00", TermLayerRDMAP, TermRDMAPRemoteOperation, TermCodeCatastrophicStream, ddpRead, nil},
	}
	for _, tc := range cases {
		for _, layout := range []TermLayout{TermLayoutSiw, TermLayoutRFC} {
			ctl := tc.siw
			if layout == TermLayoutRFC {
				ctl = tc.rfc
			}
			body := cat(hx(t, ctl), []byte{0, byte(len(tc.d))}, tc.d, tc.r)
			term, err := ParseTerminate(body)
			if err != nil {
				t.Fatalf("%s: %v", tc.name, err)
			}
			if term.Layout != layout || term.Layer != tc.layer || term.EType != tc.etype || term.Code != tc.code ||
				!term.SegmentLengthValid || !bytes.Equal(term.DDPHeader, tc.d) || !bytes.Equal(term.RDMAPHeader, tc.r) {
				t.Fatalf("%s layout %d: %+v", tc.name, layout, term)
			}
			out, err := AppendTerminate(nil, &term)
			if err != nil {
				t.Fatal(err)
			}
			mustEqualBytes(t, tc.name, out, body)
		}
	}
}

func TestGoldenAppendixA(t *testing.T) {
	pattern := rpingPattern()
	if string(pattern[:13]) != "rdma-ping-0: " || pattern[13] != 'A' || pattern[13+58] != 'A' || pattern[99] != 0 {
		t.Fatalf("pattern %q", pattern)
	}
	// MPA exchange (CRC requested by the client, echoed by siw).
	req := hx(t, reqKeyHex+"50 02 0004 0001 0001")
	rep := hx(t, repKeyHex+"50 02 0004 0001 0001")
	fq, _, err := ParseMPAFrame(req)
	if err != nil || fq.Kind != MPARequest || !fq.CRC || !fq.Enhanced || fq.IRD != 1 || fq.ORD != 1 {
		t.Fatalf("request %+v %v", fq, err)
	}
	fr, _, err := ParseMPAFrame(rep)
	if err != nil || fr.Kind != MPAReply || !fr.CRC || fr.IRD != 1 || fr.ORD != 1 {
		t.Fatalf("reply %+v %v", fr, err)
	}
	zero16 := make([]byte, 16)
	frames := []struct {
		dir string
		goldenFPDU
	}{
		{"C->S", goldenFPDU{name: "Send 1", wire: "0022 4143 00000000 00000000 00000001 00000000 0000000000100000 0a0b0c00 00000064 | 67 80 ce 1d",
			hdr: SegmentHeader{Opcode: OpSend, Last: true, MSN: 1}, payload: hx(t, "0000000000100000 0a0b0c00 00000064")}},
		{"S->C", goldenFPDU{name: "ReadReq", wire: "002e 4141 00000000 00000001 00000001 00000000 4dd7ec00 00005638f64e9db0 00000064 0a0b0c00 0000000000100000 | 7e 63 30 2a",
			hdr: SegmentHeader{Opcode: OpReadRequest, Last: true, QN: 1, MSN: 1}}},
		{"C->S", goldenFPDU{name: "ReadResp", wire: "0072 c142 4dd7ec00 00005638f64e9db0" + hexOf(pattern) + "| e9 56 df 36",
			hdr: SegmentHeader{Opcode: OpReadResponse, Last: true, STag: 0x4dd7ec00, TO: 0x00005638f64e9db0}, payload: pattern}},
		{"S->C", goldenFPDU{name: "Send go-ahead 1", wire: "0022 4143 00000000 00000000 00000001 00000000" + hexOf(zero16) + "| 84 60 9a 12",
			hdr: SegmentHeader{Opcode: OpSend, Last: true, MSN: 1}, payload: zero16}},
		{"C->S", goldenFPDU{name: "Send 2", wire: "0022 4143 00000000 00000000 00000002 00000000 0000000000200000 0d0e0f00 00000064 | 2c e6 67 ef",
			hdr: SegmentHeader{Opcode: OpSend, Last: true, MSN: 2}, payload: hx(t, "0000000000200000 0d0e0f00 00000064")}},
		{"S->C", goldenFPDU{name: "Write", wire: "0072 c140 0d0e0f00 0000000000200000" + hexOf(pattern) + "| 22 ca 58 5b",
			hdr: SegmentHeader{Opcode: OpWrite, Last: true, STag: 0x0d0e0f00, TO: 0x200000}, payload: pattern}},
		{"S->C", goldenFPDU{name: "Send go-ahead 2", wire: "0022 4143 00000000 00000000 00000002 00000000" + hexOf(zero16) + "| b3 e6 84 05",
			hdr: SegmentHeader{Opcode: OpSend, Last: true, MSN: 2}, payload: zero16}},
	}
	rx := map[string]*Reassembler{"C->S": {}, "S->C": {}}
	for _, f := range frames {
		t.Run(f.name, func(t *testing.T) {
			f.crcOn = true
			checkGoldenFPDU(t, f.goldenFPDU)
			wire := hx(t, f.wire)
			// Any corrupted byte must fail the CRC (or the pad/length check).
			for i := range wire {
				bad := bytes.Clone(wire)
				bad[i] ^= 0x01
				if _, _, err := ParseFPDU(bad, true); err == nil {
					t.Fatalf("flipping byte %d went unnoticed", i)
				}
			}
			ulpdu, _, _ := ParseFPDU(wire, true)
			seg, _ := ParseSegment(ulpdu)
			first, err := rx[f.dir].Accept(&seg.SegmentHeader, len(seg.Payload))
			if err != nil || !first {
				t.Fatalf("reassembler: first %v err %v", first, err)
			}
		})
	}
	// The Read Request body of the iteration.
	ulpdu, _, _ := ParseFPDU(hx(t, frames[1].wire), true)
	seg, _ := ParseSegment(ulpdu)
	rr, err := ParseReadRequest(seg.Payload)
	want := ReadRequest{SinkSTag: 0x4dd7ec00, SinkTO: 0x00005638f64e9db0, Size: 100, SourceSTag: 0x0a0b0c00, SourceTO: 0x100000}
	if err != nil || rr != want {
		t.Fatalf("read request %+v %v", rr, err)
	}
	// Rebuild the Read Response from the request alone.
	h := SegmentHeader{Opcode: OpReadResponse, Last: true, STag: rr.SinkSTag, TO: rr.SinkTO}
	out, _ := AppendFPDUSegment(nil, &h, pattern[:rr.Size], true)
	mustEqualBytes(t, "read response", out, hx(t, frames[2].wire))
}

func hexOf(b []byte) string {
	const digits = "0123456789abcdef"
	out := make([]byte, 0, 2*len(b))
	for _, c := range b {
		out = append(out, digits[c>>4], digits[c&15])
	}
	return string(out)
}
