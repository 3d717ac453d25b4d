package iwarp

import "testing"

// TestNoAllocs asserts that the data-path encoders and decoders do not
// allocate when given buffers with enough capacity.
func TestNoAllocs(t *testing.T) {
	payload := make([]byte, 1000)
	wh := SegmentHeader{Opcode: OpWrite, STag: 7, TO: 1 << 40}
	sh := SegmentHeader{Opcode: OpSend, QN: 0, MSN: 3}
	fpdu, _ := AppendFPDUSegment(nil, &sh, payload, true)
	ulpdu, _, _ := ParseFPDU(fpdu, true)
	hbuf := make([]byte, 0, 64)
	tbuf := make([]byte, 0, 8)
	big := make([]byte, 0, 2048)
	rrBody := AppendReadRequest(nil, &ReadRequest{Size: 5})
	termBody := hx(t, "11 00 03 00 000c c140deadbe000000000000001000")
	mpa := hx(t, reqKeyHex+"10 02 00 04 00 01 00 01")
	var sink int

	checks := []struct {
		name string
		fn   func()
	}{
		{"AppendFPDUHeader", func() { b, _ := AppendFPDUHeader(hbuf[:0], &wh, len(payload)); sink += len(b) }},
		{"AppendSegmentHeader", func() { b, _ := AppendSegmentHeader(hbuf[:0], &sh); sink += len(b) }},
		{"UpdateCRC", func() { sink += int(UpdateCRC(UpdateCRC(0, fpdu[:20]), payload)) }},
		{"AppendFPDUTrailer", func() { sink += len(AppendFPDUTrailer(tbuf[:0], 1003, 5, true)) }},
		{"AppendFPDUSegment", func() { b, _ := AppendFPDUSegment(big[:0], &sh, payload, true); sink += len(b) }},
		{"AppendRTR", func() { b, _ := AppendRTR(big[:0], RTRRead, true); sink += len(b) }},
		{"ParseFPDU", func() { u, n, _ := ParseFPDU(fpdu, true); sink += len(u) + n }},
		{"ParseFPDUHeader", func() { h, n, _ := ParseFPDUHeader(fpdu); sink += h.ULPDULength + n }},
		{"CheckFPDUTrailer", func() {
			if CheckFPDUTrailer(fpdu[len(fpdu)-4:], len(ulpdu), ChecksumCRC(fpdu[:len(fpdu)-4]), true) == nil {
				sink++
			}
		}},
		{"ParseSegment", func() { s, _ := ParseSegment(ulpdu); sink += len(s.Payload) }},
		{"ParseSegmentHeader", func() { h, n, _ := ParseSegmentHeader(ulpdu); sink += int(h.MSN) + n }},
		{"Segmenter", func() {
			s, _ := NewSegmenter(wh, 5000, 1428)
			for {
				_, _, n, ok := s.Next()
				if !ok {
					break
				}
				sink += n
			}
		}},
		{"Reassembler", func() {
			var r Reassembler
			_, _ = r.Accept(&sh, 10)
		}},
		{"ParseReadRequest", func() { r, _ := ParseReadRequest(rrBody); sink += int(r.Size) }},
		{"AppendReadRequest", func() { sink += len(AppendReadRequest(hbuf[:0], &ReadRequest{})) }},
		{"ParseTerminate", func() { tm, _ := ParseTerminate(termBody); sink += len(tm.DDPHeader) }},
		{"AppendTerminateFPDU", func() {
			tm := Terminate{Layer: TermLayerDDP, DDPHeader: termBody[6:]}
			b, _ := AppendTerminateFPDU(big[:0], 1, &tm, true)
			sink += len(b)
		}},
		{"ParseMPAFrame", func() { f, n, _ := ParseMPAFrame(mpa); sink += int(f.IRD) + n }},
		{"AppendMPAFrame", func() {
			f := MPAFrame{Kind: MPAReply, Revision: 2, Enhanced: true, IRD: 1}
			b, _ := AppendMPAFrame(big[:0], &f)
			sink += len(b)
		}},
	}
	for _, c := range checks {
		if a := testing.AllocsPerRun(100, c.fn); a != 0 {
			t.Errorf("%s: %v allocs per run", c.name, a)
		}
	}
	_ = sink
}

func BenchmarkFPDUGather4K(b *testing.B) {
	payload := make([]byte, 4096)
	h := SegmentHeader{Opcode: OpSend, MSN: 1, Last: true}
	hbuf := make([]byte, 0, 20)
	tbuf := make([]byte, 0, 8)
	b.SetBytes(int64(len(payload)))
	for b.Loop() {
		hdr, _ := AppendFPDUHeader(hbuf[:0], &h, len(payload))
		crc := UpdateCRC(UpdateCRC(0, hdr), payload)
		_ = AppendFPDUTrailer(tbuf[:0], h.Len()+len(payload), crc, true)
	}
}

func BenchmarkParseFPDU4K(b *testing.B) {
	h := SegmentHeader{Opcode: OpSend, MSN: 1, Last: true}
	fpdu, _ := AppendFPDUSegment(nil, &h, make([]byte, 4096), true)
	b.SetBytes(int64(len(fpdu)))
	for b.Loop() {
		u, _, err := ParseFPDU(fpdu, true)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := ParseSegment(u); err != nil {
			b.Fatal(err)
		}
	}
}
