package ndtest

import (
	"testing"

	"github.com/godirect/nd"
)

// writeCases check Endpoint.Write: exact placement inside the peer's window,
// gather and inline sources, zero-byte Writes, the window bounds, rights and
// tokens, silent success, and that a later Send never overtakes a Write's
// data.
var writeCases = []testCase{
	{"Placement", `docs/semantics.md "window offsets": the bytes land at the given offset of the window and nowhere else`, writePlacement},
	{"ManyOffsets", `docs/semantics.md "window offsets": a Write places its bytes at any offset of the window`, writeManyOffsets},
	{"Gather", `docs/semantics.md "scatter/gather": the SGEs are gathered in order`, writeGather},
	{"ToEndOfWindow", `docs/semantics.md "window offsets": a Write may reach the window's last byte`, writeToEndOfWindow},
	{"ZeroByte", `docs/semantics.md "zero bytes": a Write of no SGE completes with 0 bytes`, writeZeroByte},
	{"Inline", `docs/semantics.md "inline data": inline bytes need no registration and may be reused once Write returns`, writeInline},
	{"InlineTooLong", `docs/semantics.md "inline data": inline bytes beyond the granted inline size fail ND_BUFFER_OVERFLOW`, writeInlineTooLong},
	{"TooManySGEs", `docs/semantics.md "posting checks": more SGEs than OutboundSGE fail ND_DATA_OVERRUN`, writeTooManySGEs},
	{"SilentSuccess", `docs/semantics.md "silent success": ND_OP_FLAG_SILENT_SUCCESS suppresses the completion of a successful Write`, writeSilentSuccess},
	{"PolledByteAnswered", `docs/semantics.md "in-order placement": a polled last byte is stored once, after the rest, so a poller may answer in that very byte`, writePolledByteAnswered},
	{"SendAfterWrite", `docs/semantics.md "Send after Write": a Send posted after a Write is received after the Write's data is placed`, writeSendAfterWrite},
	{"AccessViolation/PastEnd", `docs/semantics.md "refused Read or Write": a Write beyond the window, through a forged descriptor or to a window without write access completes ND_ACCESS_VIOLATION and ends the connection`, writeViolation(nd.FlagAllowWrite, false, func(d nd.MWDescriptor) (nd.MWDescriptor, uint64, int) { return d, d.Length - 99, 100 })},
	{"AccessViolation/OffsetWraps", `docs/semantics.md "refused Read or Write": a Write beyond the window, through a forged descriptor or to a window without write access completes ND_ACCESS_VIOLATION and ends the connection`, writeViolation(nd.FlagAllowWrite, true, func(d nd.MWDescriptor) (nd.MWDescriptor, uint64, int) { return d, ^uint64(0) - 3, 16 })},
	{"AccessViolation/ForgedToken", `docs/semantics.md "refused Read or Write": a Write beyond the window, through a forged descriptor or to a window without write access completes ND_ACCESS_VIOLATION and ends the connection`, writeViolation(nd.FlagAllowWrite, true, func(d nd.MWDescriptor) (nd.MWDescriptor, uint64, int) {
		d.Token ^= 0x5a5a0001
		return d, 0, 16
	})},
	{"AccessViolation/ForgedBase", `docs/semantics.md "refused Read or Write": a Write beyond the window, through a forged descriptor or to a window without write access completes ND_ACCESS_VIOLATION and ends the connection`, writeViolation(nd.FlagAllowWrite, true, func(d nd.MWDescriptor) (nd.MWDescriptor, uint64, int) {
		d.Base -= 16
		return d, 0, 16
	})},
	{"AccessViolation/ForgedLength", `docs/semantics.md "refused Read or Write": a Write beyond the window, through a forged descriptor or to a window without write access completes ND_ACCESS_VIOLATION and ends the connection`, writeViolation(nd.FlagAllowWrite, false, func(d nd.MWDescriptor) (nd.MWDescriptor, uint64, int) {
		n := d.Length
		d.Length += 4096
		return d, n - 8, 16
	})},
	// ndmemorytest NdWriteViolation: a window bound for Read only.
	{"AccessViolation/ReadOnlyWindow", `docs/semantics.md "refused Read or Write": a Write beyond the window, through a forged descriptor or to a window without write access completes ND_ACCESS_VIOLATION and ends the connection`, writeViolation(nd.FlagAllowRead, true, func(d nd.MWDescriptor) (nd.MWDescriptor, uint64, int) { return d, 0, 16 })},
	{"AccessViolation/StaleToken", `docs/semantics.md "refused Read or Write": a Write through an invalidated window's descriptor completes ND_ACCESS_VIOLATION`, writeAccessViolationStaleToken},
}

func writePlacement(t *testing.T, p nd.Provider) {
	pr, win, desc := windowPair(t, p, PairConfig{}, 4096, 1, nd.FlagAllowWrite)
	want := append([]byte(nil), win...)
	data := pattern(100, 2)
	res := rdmaWrite(t, pr.Active, desc, 1000, data, 0)
	Expect(t, pr.Active.OutCQ, res, nd.Success, len(data))
	copy(want[1000:], data)
	checkBytes(t, "window after a Write at offset 1000 (guard bytes around it unchanged)", win, want)
}

func writeManyOffsets(t *testing.T, p nd.Provider) {
	const size = 8192
	pr, win, desc := windowPair(t, p, PairConfig{}, size, 3, allowRW)
	want := append([]byte(nil), win...)
	for i, c := range []struct{ off, n int }{{0, 1}, {1, 7}, {9, 100}, {1000, 3000}, {4095, 2}, {size - 1, 1}, {size - 300, 300}, {333, 17}} {
		data := pattern(c.n, byte(10+i))
		res := rdmaWrite(t, pr.Active, desc, uint64(c.off), data, 0)
		Expect(t, pr.Active.OutCQ, res, nd.Success, c.n)
		copy(want[c.off:], data)
		checkBytes(t, "window after Write", win, want)
	}
}

func writeGather(t *testing.T, p nd.Provider) {
	pr, win, desc := windowPair(t, p, PairConfig{}, 4096, 4, nd.FlagAllowWrite)
	want := append([]byte(nil), win...)
	a, amr := regBuf(t, pr.Active, 200, 5)
	b, bmr := regBuf(t, pr.Active, 200, 6)
	sgl := []nd.SGE{{Buffer: a[3:50], Region: amr}, {Buffer: b[100:200], Region: bmr}, {Buffer: a[150:151], Region: amr}}
	var data []byte
	for _, e := range sgl {
		data = append(data, e.Buffer...)
	}
	res := new(nd.Result)
	mustPost(t, "Write(3 SGEs)", pr.Active.Endpoint.Write(res, sgl, desc, 77, 0))
	Expect(t, pr.Active.OutCQ, res, nd.Success, len(data))
	copy(want[77:], data)
	checkBytes(t, "window after a gathered Write", win, want)
}

func writeToEndOfWindow(t *testing.T, p nd.Provider) {
	pr, win, desc := windowPair(t, p, PairConfig{}, 1000, 7, nd.FlagAllowWrite)
	want := append([]byte(nil), win...)
	data := pattern(100, 8)
	res := rdmaWrite(t, pr.Active, desc, 900, data, 0)
	Expect(t, pr.Active.OutCQ, res, nd.Success, 100)
	copy(want[900:], data)
	checkBytes(t, "window after a Write to its end", win, want)
}

func writeZeroByte(t *testing.T, p nd.Provider) {
	pr, win, desc := windowPair(t, p, PairConfig{}, 64, 9, nd.FlagAllowWrite)
	want := append([]byte(nil), win...)
	res := new(nd.Result)
	mustPost(t, "Write(nil)", pr.Active.Endpoint.Write(res, nil, desc, 10, 0))
	Expect(t, pr.Active.OutCQ, res, nd.Success, 0)
	checkBytes(t, "window after a zero-byte Write", win, want)
	transfer(t, pr.Active, pr.Passive, pattern(4, 10))
}

func writeInline(t *testing.T, p nd.Provider) {
	pr, win, desc := windowPair(t, p, PairConfig{}, 256, 11, nd.FlagAllowWrite)
	n := min(pr.Active.Inline, 64)
	if n == 0 {
		t.Skip("the endpoint grants no inline data")
	}
	want := append([]byte(nil), win...)
	src := pattern(n, 12)
	copy(want[30:], src)
	res := new(nd.Result)
	mustPost(t, "inline Write", pr.Active.Endpoint.Write(res, []nd.SGE{{Buffer: src}}, desc, 30, 0))
	for i := range src { // the caller may reuse inline bytes at once
		src[i] = ^src[i]
	}
	Expect(t, pr.Active.OutCQ, res, nd.Success, n)
	checkBytes(t, "window after an inline Write", win, want)
}

func writeInlineTooLong(t *testing.T, p nd.Provider) {
	pr, win, desc := windowPair(t, p, PairConfig{}, 4096, 13, nd.FlagAllowWrite)
	want := append([]byte(nil), win...)
	err := pr.Active.Endpoint.Write(new(nd.Result), []nd.SGE{{Buffer: make([]byte, pr.Active.Inline+1)}}, desc, 0, 0)
	expectStatus(t, "Write with MaxInlineData+1 inline bytes", err, nd.ErrBufferOverflow)
	ExpectEmpty(t, pr.Active.OutCQ)
	checkBytes(t, "window after a refused Write", win, want)
	res := rdmaWrite(t, pr.Active, desc, 0, pattern(8, 14), 0)
	Expect(t, pr.Active.OutCQ, res, nd.Success, 8)
}

func writeTooManySGEs(t *testing.T, p nd.Provider) {
	pr, _, desc := windowPair(t, p, PairConfig{}, 512, 15, nd.FlagAllowWrite)
	buf, mr := regBuf(t, pr.Active, 64, 16)
	sgl := make([]nd.SGE, DefaultLimits.OutboundSGE+1)
	for i := range sgl {
		sgl[i] = nd.SGE{Buffer: buf[i*4 : i*4+4], Region: mr}
	}
	expectStatus(t, "Write with OutboundSGE+1 entries", pr.Active.Endpoint.Write(new(nd.Result), sgl, desc, 0, 0), nd.ErrDataOverrun)
	ExpectEmpty(t, pr.Active.OutCQ)
	res := rdmaWrite(t, pr.Active, desc, 0, pattern(8, 17), 0)
	Expect(t, pr.Active.OutCQ, res, nd.Success, 8)
}

func writeSilentSuccess(t *testing.T, p nd.Provider) {
	pr, win, desc := windowPair(t, p, PairConfig{}, 1024, 18, nd.FlagAllowWrite)
	want := append([]byte(nil), win...)
	d1, d2 := pattern(100, 19), pattern(50, 20)
	rdmaWrite(t, pr.Active, desc, 0, d1, nd.FlagSilentSuccess)
	r2 := rdmaWrite(t, pr.Active, desc, 500, d2, 0)
	Expect(t, pr.Active.OutCQ, r2, nd.Success, len(d2))
	ExpectEmpty(t, pr.Active.OutCQ)
	copy(want, d1)
	copy(want[500:], d2)
	checkBytes(t, "window after a silent and a plain Write", win, want)
}

// A Send posted after a Write is never visible before the Write's data:
// the owner checks its window when the Send's Receive completes.
func writeSendAfterWrite(t *testing.T, p nd.Provider) {
	const size = 256 << 10
	pr, win, desc := windowPair(t, p, PairConfig{}, size, 21, nd.FlagAllowWrite)
	for round := range 3 {
		data := pattern(size, byte(22+round))
		rr, _ := postRecv(t, pr.Passive, 4)
		wr := rdmaWrite(t, pr.Active, desc, 0, data, 0)
		sr := postSend(t, pr.Active, []byte{1, 2, 3, byte(round)}, 0)
		Expect(t, pr.Passive.InCQ, rr, nd.Success, 4)
		checkBytes(t, "window when the following Send arrived", win, data)
		Expect(t, pr.Active.OutCQ, wr, nd.Success, size)
		Expect(t, pr.Active.OutCQ, sr, nd.Success, 4)
	}
}

// ndmemorytest NdInvalidWrite.
func writeAccessViolationStaleToken(t *testing.T, p nd.Provider) {
	pr := NewPair(t, p, PairConfig{})
	win := pattern(512, 32)
	_, mw, desc := bindWindow(t, pr.Passive, win, nd.FlagAllowWrite, nil)
	ar, _ := postRecv(t, pr.Active, 8)
	pRecv, _ := postRecv(t, pr.Passive, 8)
	data := pattern(64, 33)
	ok := rdmaWrite(t, pr.Active, desc, 0, data, 0)
	Expect(t, pr.Active.OutCQ, ok, nd.Success, 64)
	invalidate(t, pr.Passive, mw)
	want := append([]byte(nil), win...)
	checkBytes(t, "window after the Write before Invalidate", want[:64], data)
	res := rdmaWrite(t, pr.Active, desc, 64, pattern(64, 34), 0)
	expectAccessViolation(t, pr.Active.OutCQ, res, nd.CauseRemoteAccess)
	expectTerminated(t, pr, []*nd.Result{ar}, []*nd.Result{pRecv})
	expectReason(t, pr.Active.Connector, "the initiator of a refused Write", &nd.DisconnectError{Op: "Write", Status: nd.ErrAccessViolation, Cause: nd.CauseRemoteAccess})
	expectReason(t, pr.Passive.Connector, "the target of a refused Write", &nd.DisconnectError{Peer: true, Op: "Write", Status: nd.ErrAccessViolation, Cause: nd.CausePeerAccess})
	checkBytes(t, "window after a Write through a stale descriptor", win, want)
}

// writeViolation returns a case that writes, to a 512-byte window bound
// with flags, through the descriptor, offset and length remote makes of
// the window's descriptor, a Write the window does not grant: it
// completes ErrAccessViolation and ends the connection, and when
// untouched is set the window is unchanged.
func writeViolation(flags nd.Flags, untouched bool, remote func(d nd.MWDescriptor) (nd.MWDescriptor, uint64, int)) func(t *testing.T, p nd.Provider) {
	return func(t *testing.T, p nd.Provider) {
		pr, win, desc := windowPair(t, p, PairConfig{}, 512, 30, flags)
		want := append([]byte(nil), win...)
		ar, _ := postRecv(t, pr.Active, 8)
		pRecv, _ := postRecv(t, pr.Passive, 8)
		d, off, n := remote(desc)
		res := rdmaWrite(t, pr.Active, d, off, pattern(n, 31), 0)
		expectAccessViolation(t, pr.Active.OutCQ, res, nd.CauseRemoteAccess)
		expectTerminated(t, pr, []*nd.Result{ar}, []*nd.Result{pRecv})
		expectReason(t, pr.Active.Connector, "the initiator of a refused Write", &nd.DisconnectError{Op: "Write", Status: nd.ErrAccessViolation, Cause: nd.CauseRemoteAccess})
		if untouched {
			checkBytes(t, "window after a refused Write", win, want)
		}
	}
}
