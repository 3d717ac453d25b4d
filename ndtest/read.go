package ndtest

import (
	"testing"

	"github.com/godirect/nd"
)

// windowPair connects a pair and binds a window over a fresh size-byte
// buffer (filled with pattern(seed)) on the passive side with flags; the
// active side is the initiator of RDMA to it.
func windowPair(t testing.TB, p nd.Provider, cfg PairConfig, size int, seed byte, flags nd.Flags) (*Pair, []byte, nd.MWDescriptor) {
	t.Helper()
	pr := NewPair(t, p, cfg)
	buf := pattern(size, seed)
	_, _, desc := bindWindow(t, pr.Passive, buf, flags, nil)
	return pr, buf, desc
}

const allowRW = nd.FlagAllowRead | nd.FlagAllowWrite

// readCases check Endpoint.Read: placement and scatter, the window bounds,
// access rights and tokens, read limits, fences, completion order, silent
// success and the immediate errors.
var readCases = []testCase{
	{"ZeroByte", `docs/semantics.md "zero bytes": a Read of no SGE completes with 0 bytes`, readZeroByte},
	{"ManyOffsets", `docs/semantics.md "window offsets": a Read copies the window's bytes from the given offset`, readManyOffsets},
	{"ScatterHeaderPayload", `docs/semantics.md "scatter/gather": the bytes read are scattered over the SGEs in order`, readScatterHeaderPayload},
	{"ToEndOfWindow", `docs/semantics.md "window offsets": a Read may reach the window's last byte`, readToEndOfWindow},
	{"AccessViolation/PastEnd", `docs/semantics.md "refused Read or Write": a Read beyond the window, through a forged descriptor or without read access completes ND_ACCESS_VIOLATION and ends the connection`, readViolation(nd.FlagAllowRead, func(d nd.MWDescriptor) (nd.MWDescriptor, uint64, int) {
		return d, d.Length - 99, 100
	})},
	{"AccessViolation/OffsetBeyondEnd", `docs/semantics.md "refused Read or Write": a Read beyond the window, through a forged descriptor or without read access completes ND_ACCESS_VIOLATION and ends the connection`, readViolation(nd.FlagAllowRead, func(d nd.MWDescriptor) (nd.MWDescriptor, uint64, int) {
		return d, d.Length + 1, 1
	})},
	{"AccessViolation/OffsetWraps", `docs/semantics.md "refused Read or Write": a Read beyond the window, through a forged descriptor or without read access completes ND_ACCESS_VIOLATION and ends the connection`, readViolation(nd.FlagAllowRead, func(d nd.MWDescriptor) (nd.MWDescriptor, uint64, int) {
		return d, ^uint64(0) - 3, 16
	})},
	{"AccessViolation/ForgedToken", `docs/semantics.md "refused Read or Write": a Read beyond the window, through a forged descriptor or without read access completes ND_ACCESS_VIOLATION and ends the connection`, readViolation(nd.FlagAllowRead, func(d nd.MWDescriptor) (nd.MWDescriptor, uint64, int) {
		d.Token ^= 0x5a5a0001
		return d, 0, 16
	})},
	{"AccessViolation/ForgedBase", `docs/semantics.md "refused Read or Write": a Read beyond the window, through a forged descriptor or without read access completes ND_ACCESS_VIOLATION and ends the connection`, readViolation(nd.FlagAllowRead, func(d nd.MWDescriptor) (nd.MWDescriptor, uint64, int) {
		d.Base -= 16
		return d, 0, 16
	})},
	{"AccessViolation/ForgedLength", `docs/semantics.md "refused Read or Write": a Read beyond the window, through a forged descriptor or without read access completes ND_ACCESS_VIOLATION and ends the connection`, readViolation(nd.FlagAllowRead, func(d nd.MWDescriptor) (nd.MWDescriptor, uint64, int) {
		n := d.Length
		d.Length += 4096
		return d, n - 8, 16
	})},
	{"AccessViolation/WithoutAllowRead", `docs/semantics.md "refused Read or Write": a Read beyond the window, through a forged descriptor or without read access completes ND_ACCESS_VIOLATION and ends the connection`, readViolation(nd.FlagAllowWrite, func(d nd.MWDescriptor) (nd.MWDescriptor, uint64, int) {
		return d, 0, 16
	})},
	{"AccessViolation/StaleToken", `docs/semantics.md "refused Read or Write": a Read through an invalidated window's descriptor completes ND_ACCESS_VIOLATION`, readAccessViolationStaleToken},
	{"AccessViolation/LocalBufferOutsideRegion", `docs/semantics.md "bad local SGE": a local buffer outside its registration completes ND_ACCESS_VIOLATION`, readAccessViolationLocalBufferOutsideRegion},
	{"ZeroOutboundReadLimit", `docs/semantics.md "Read with a negotiated outbound read limit of 0": a Read on an endpoint whose outbound read limit is 0 completes ND_INVALID_REQUEST`, readZeroOutboundReadLimit},
	{"PeerInboundReadLimitZero", `docs/semantics.md "Read with a negotiated outbound read limit of 0": a Read to a peer whose inbound read limit is 0 completes ND_INVALID_REQUEST`, readPeerInboundReadLimitZero},
	{"BeyondReadLimitWait", `docs/semantics.md "Reads beyond the read limit": Reads beyond the negotiated limit wait for earlier ones instead of failing`, readBeyondReadLimitWait},
	{"ReadFence", `docs/semantics.md "FlagReadFence": ND_OP_FLAG_READ_FENCE holds a request until the earlier Reads completed`, readReadFence},
	{"CompletionOrder", `docs/semantics.md "completion order": an endpoint's requests complete in post order, Reads among them`, readCompletionOrder},
	{"SilentSuccess", `docs/semantics.md "silent success": ND_OP_FLAG_SILENT_SUCCESS suppresses the completion of a successful Read`, readSilentSuccess},
	{"SilentFailure", `docs/semantics.md "silent success": a silent Read that fails still completes, with its error`, readSilentFailure},
	{"TooManySGEs", `docs/semantics.md "posting checks": more SGEs than OutboundSGE fail ND_DATA_OVERRUN`, readTooManySGEs},
	{"TooLong", `docs/semantics.md "posting checks": a Read beyond MaxOutboundLength fails ND_BUFFER_OVERFLOW`, readTooLong},
}

func readZeroByte(t *testing.T, p nd.Provider) {
	pr, _, desc := windowPair(t, p, PairConfig{}, 64, 1, nd.FlagAllowRead)
	res, _ := rdmaRead(t, pr.Active, desc, 0, 0, 0)
	Expect(t, pr.Active.OutCQ, res, nd.Success, 0)
	transfer(t, pr.Active, pr.Passive, pattern(4, 2)) // the connection is intact
}

func readManyOffsets(t *testing.T, p nd.Provider) {
	const size = 8192
	pr, win, desc := windowPair(t, p, PairConfig{}, size, 3, nd.FlagAllowRead)
	for _, c := range []struct{ off, n int }{{0, 1}, {0, size}, {1, 7}, {7, 100}, {1000, 3000}, {4095, 2}, {size - 1, 1}, {size / 2, size / 2}, {333, 4444}} {
		res, got := rdmaRead(t, pr.Active, desc, uint64(c.off), c.n, 0)
		Expect(t, pr.Active.OutCQ, res, nd.Success, c.n)
		checkBytes(t, "bytes read", got, win[c.off:c.off+c.n])
	}
}

// A header into one entry and the payload into another (the reference
// page's example), in two registrations.
func readScatterHeaderPayload(t *testing.T, p nd.Provider) {
	pr, win, desc := windowPair(t, p, PairConfig{}, 4096, 4, nd.FlagAllowRead)
	hdr, hmr := regBuf(t, pr.Active, 32, 5)
	payload, pmr := regBuf(t, pr.Active, 1000, 6)
	sgl := []nd.SGE{{Buffer: hdr[:16], Region: hmr}, {Buffer: payload, Region: pmr}, {Buffer: hdr[16:], Region: hmr}}
	res := new(nd.Result)
	mustPost(t, "Read(3 SGEs)", pr.Active.Endpoint.Read(res, sgl, desc, 10, 0))
	Expect(t, pr.Active.OutCQ, res, nd.Success, 1032)
	checkBytes(t, "header", hdr[:16], win[10:26])
	checkBytes(t, "payload", payload, win[26:1026])
	checkBytes(t, "trailer", hdr[16:], win[1026:1042])
}

func readToEndOfWindow(t *testing.T, p nd.Provider) {
	pr, win, desc := windowPair(t, p, PairConfig{}, 1000, 7, nd.FlagAllowRead)
	res, got := rdmaRead(t, pr.Active, desc, 900, 100, 0)
	Expect(t, pr.Active.OutCQ, res, nd.Success, 100)
	checkBytes(t, "last 100 bytes", got, win[900:])
}

// ndmemorytest NdInvalidRead: after the owner's Invalidate the
// descriptor is stale.
func readAccessViolationStaleToken(t *testing.T, p nd.Provider) {
	pr := NewPair(t, p, PairConfig{})
	win := pattern(512, 9)
	_, mw, desc := bindWindow(t, pr.Passive, win, nd.FlagAllowRead, nil)
	ar, _ := postRecv(t, pr.Active, 8)
	pRecv, _ := postRecv(t, pr.Passive, 8)
	ok, got := rdmaRead(t, pr.Active, desc, 0, 64, 0)
	Expect(t, pr.Active.OutCQ, ok, nd.Success, 64)
	checkBytes(t, "Read before Invalidate", got, win[:64])
	invalidate(t, pr.Passive, mw)
	res, _ := rdmaRead(t, pr.Active, desc, 0, 64, 0)
	expectAccessViolation(t, pr.Active.OutCQ, res, nd.CauseRemoteAccess)
	expectTerminated(t, pr, []*nd.Result{ar}, []*nd.Result{pRecv})
	expectReason(t, pr.Active.Connector, "the initiator of a refused Read", &nd.DisconnectError{Op: "Read", Status: nd.ErrAccessViolation, Cause: nd.CauseRemoteAccess})
	expectReason(t, pr.Passive.Connector, "the target of a refused Read", &nd.DisconnectError{Peer: true, Op: "Read", Status: nd.ErrAccessViolation, Cause: nd.CausePeerAccess})
}

func readAccessViolationLocalBufferOutsideRegion(t *testing.T, p nd.Provider) {
	pr, _, desc := windowPair(t, p, PairConfig{}, 512, 10, nd.FlagAllowRead)
	ar, _ := postRecv(t, pr.Active, 8)
	pRecv, _ := postRecv(t, pr.Passive, 8)
	_, mr := regBuf(t, pr.Active, 64, 11)
	res := new(nd.Result)
	mustPost(t, "Read into a buffer outside its region", pr.Active.Endpoint.Read(res, one(make([]byte, 32), mr), desc, 0, 0))
	expectAccessViolation(t, pr.Active.OutCQ, res, nd.CauseLocalAccess)
	expectTerminated(t, pr, []*nd.Result{ar}, []*nd.Result{pRecv})
	expectReason(t, pr.Active.Connector, "a Read with a bad local entry", &nd.DisconnectError{Op: "Read", Status: nd.ErrAccessViolation, Cause: nd.CauseLocalAccess})
}

func readZeroOutboundReadLimit(t *testing.T, p nd.Provider) {
	l := DefaultLimits
	l.OutboundReadLimit = 0
	pr, _, desc := windowPair(t, p, PairConfig{ActiveLimits: l}, 64, 12, nd.FlagAllowRead)
	res, _ := rdmaRead(t, pr.Active, desc, 0, 16, 0)
	Expect(t, pr.Active.OutCQ, res, nd.ErrInvalidRequest, -1)
	expectTerminated(t, pr, nil, nil)
}

// The negotiated outbound limit is at most the peer's inbound limit.
func readPeerInboundReadLimitZero(t *testing.T, p nd.Provider) {
	l := DefaultLimits
	l.InboundReadLimit = 0
	pr, _, desc := windowPair(t, p, PairConfig{PassiveLimits: l}, 64, 13, nd.FlagAllowRead)
	res, _ := rdmaRead(t, pr.Active, desc, 0, 16, 0)
	Expect(t, pr.Active.OutCQ, res, nd.ErrInvalidRequest, -1)
	expectTerminated(t, pr, nil, nil)
}

// Reads beyond the read limit wait for earlier ones, then succeed.
func readBeyondReadLimitWait(t *testing.T, p nd.Provider) {
	l := DefaultLimits
	l.OutboundReadLimit = 1
	pr, win, desc := windowPair(t, p, PairConfig{ActiveLimits: l}, 64<<10, 14, nd.FlagAllowRead)
	const n = 8
	var res [n]*nd.Result
	var got [n][]byte
	for i := range n {
		res[i], got[i] = rdmaRead(t, pr.Active, desc, uint64(i*8192), 8192, 0)
	}
	for i := range n {
		Expect(t, pr.Active.OutCQ, res[i], nd.Success, 8192)
		checkBytes(t, "Read beyond the read limit", got[i], win[i*8192:(i+1)*8192])
	}
}

// MS-MPI's rendezvous: Reads, then a Send with FlagReadFence telling the
// owner it may reuse the buffer. The owner overwrites the window as soon
// as the Send arrives; every Read must still see the original bytes.
func readReadFence(t *testing.T, p nd.Provider) {
	const chunk, n = 64 << 10, 4
	pr, win, desc := windowPair(t, p, PairConfig{}, chunk*n, 15, nd.FlagAllowRead)
	want := append([]byte(nil), win...)
	done, _ := postRecv(t, pr.Passive, 4)
	var reads [n]*nd.Result
	var got [n][]byte
	for i := range n {
		reads[i], got[i] = rdmaRead(t, pr.Active, desc, uint64(i*chunk), chunk, 0)
	}
	sr := new(nd.Result)
	msg, mr := regBuf(t, pr.Active, 4, 16)
	mustPost(t, "Send(FlagReadFence)", pr.Active.Endpoint.Send(sr, one(msg, mr), nd.FlagReadFence))
	Expect(t, pr.Passive.InCQ, done, nd.Success, 4)
	for i := range win {
		win[i] = ^win[i]
	}
	for i := range n {
		Expect(t, pr.Active.OutCQ, reads[i], nd.Success, chunk)
		checkBytes(t, "Read completed before the fenced Send arrived", got[i], want[i*chunk:(i+1)*chunk])
	}
	Expect(t, pr.Active.OutCQ, sr, nd.Success, 4)
}

// Outbound completions come in post order whatever the kind.
func readCompletionOrder(t *testing.T, p nd.Provider) {
	pr, win, desc := windowPair(t, p, PairConfig{}, 64<<10, 17, allowRW)
	pRecv, pbuf := postRecv(t, pr.Passive, 8)
	r1, g1 := rdmaRead(t, pr.Active, desc, 0, 32<<10, 0)
	wdata := pattern(1000, 18)
	w1 := rdmaWrite(t, pr.Active, desc, 40<<10, wdata, 0)
	r2, g2 := rdmaRead(t, pr.Active, desc, 50<<10, 1000, 0)
	s1 := postSend(t, pr.Active, pattern(8, 19), 0)
	r3, _ := rdmaRead(t, pr.Active, desc, 0, 0, 0)
	Expect(t, pr.Active.OutCQ, r1, nd.Success, 32<<10)
	Expect(t, pr.Active.OutCQ, w1, nd.Success, len(wdata))
	Expect(t, pr.Active.OutCQ, r2, nd.Success, 1000)
	Expect(t, pr.Active.OutCQ, s1, nd.Success, 8)
	Expect(t, pr.Active.OutCQ, r3, nd.Success, 0)
	checkBytes(t, "first Read", g1, pattern(64<<10, 17)[:32<<10])
	checkBytes(t, "second Read", g2, pattern(64<<10, 17)[50<<10:50<<10+1000])
	Expect(t, pr.Passive.InCQ, pRecv, nd.Success, 8)
	checkBytes(t, "Send", pbuf, pattern(8, 19))
	checkBytes(t, "window after the Write", win[40<<10:40<<10+1000], wdata)
}

func readSilentSuccess(t *testing.T, p nd.Provider) {
	pr, win, desc := windowPair(t, p, PairConfig{}, 4096, 20, nd.FlagAllowRead)
	_, g1 := rdmaRead(t, pr.Active, desc, 0, 100, nd.FlagSilentSuccess)
	r2, g2 := rdmaRead(t, pr.Active, desc, 100, 200, 0)
	Expect(t, pr.Active.OutCQ, r2, nd.Success, 200)
	ExpectEmpty(t, pr.Active.OutCQ)
	checkBytes(t, "silent Read", g1, win[:100])
	checkBytes(t, "second Read", g2, win[100:300])
}

// A failing request completes even when it asked for silent success.
func readSilentFailure(t *testing.T, p nd.Provider) {
	pr, _, desc := windowPair(t, p, PairConfig{}, 512, 21, nd.FlagAllowRead)
	ar, _ := postRecv(t, pr.Active, 8)
	pRecv, _ := postRecv(t, pr.Passive, 8)
	res, _ := rdmaRead(t, pr.Active, desc, 500, 100, nd.FlagSilentSuccess)
	expectAccessViolation(t, pr.Active.OutCQ, res, nd.CauseRemoteAccess)
	expectTerminated(t, pr, []*nd.Result{ar}, []*nd.Result{pRecv})
}

func readTooManySGEs(t *testing.T, p nd.Provider) {
	pr, _, desc := windowPair(t, p, PairConfig{}, 512, 22, nd.FlagAllowRead)
	buf, mr := regBuf(t, pr.Active, 64, 23)
	sgl := make([]nd.SGE, DefaultLimits.OutboundSGE+1)
	for i := range sgl {
		sgl[i] = nd.SGE{Buffer: buf[i*4 : i*4+4], Region: mr}
	}
	expectStatus(t, "Read with OutboundSGE+1 entries", pr.Active.Endpoint.Read(new(nd.Result), sgl, desc, 0, 0), nd.ErrDataOverrun)
	ExpectEmpty(t, pr.Active.OutCQ)
	res, got := rdmaRead(t, pr.Active, desc, 0, 8, 0)
	Expect(t, pr.Active.OutCQ, res, nd.Success, 8)
	checkBytes(t, "Read after the refused one", got, pattern(512, 22)[:8])
}

func readTooLong(t *testing.T, p nd.Provider) {
	pr, _, desc := windowPair(t, p, PairConfig{}, 512, 24, nd.FlagAllowRead)
	info := query(t, pr.Active.Adapter)
	n := DefaultLimits.OutboundSGE
	per := info.MaxOutboundLength/n + 1
	skipIfTooBig(t, int64(per), "a Read beyond MaxOutboundLength")
	if per > info.MaxRegistrationSize {
		t.Skipf("MaxOutboundLength %d cannot be exceeded with %d SGEs of one registration", info.MaxOutboundLength, n)
	}
	buf := make([]byte, per)
	mr := pr.Active.Register(t, buf)
	sgl := make([]nd.SGE, n)
	for i := range sgl {
		sgl[i] = nd.SGE{Buffer: buf, Region: mr}
	}
	expectStatus(t, "Read of MaxOutboundLength+ bytes", pr.Active.Endpoint.Read(new(nd.Result), sgl, desc, 0, 0), nd.ErrBufferOverflow)
	ExpectEmpty(t, pr.Active.OutCQ)
	res, _ := rdmaRead(t, pr.Active, desc, 0, 8, 0)
	Expect(t, pr.Active.OutCQ, res, nd.Success, 8)
}

// readViolation returns a case that reads, from a 512-byte window bound
// with flags, through the descriptor, offset and length remote makes of
// the window's descriptor, a way to reach memory the window does not
// grant: the Read completes ErrAccessViolation and the connection ends.
func readViolation(flags nd.Flags, remote func(d nd.MWDescriptor) (nd.MWDescriptor, uint64, int)) func(t *testing.T, p nd.Provider) {
	return func(t *testing.T, p nd.Provider) {
		pr, _, desc := windowPair(t, p, PairConfig{}, 512, 8, flags)
		ar, _ := postRecv(t, pr.Active, 8)
		pRecv, _ := postRecv(t, pr.Passive, 8)
		d, off, n := remote(desc)
		res, _ := rdmaRead(t, pr.Active, d, off, n, 0)
		expectAccessViolation(t, pr.Active.OutCQ, res, nd.CauseRemoteAccess)
		expectTerminated(t, pr, []*nd.Result{ar}, []*nd.Result{pRecv})
		expectReason(t, pr.Active.Connector, "the initiator of a refused Read", &nd.DisconnectError{Op: "Read", Status: nd.ErrAccessViolation, Cause: nd.CauseRemoteAccess})
	}
}
