package ndtest

import (
	"bytes"
	"testing"

	"github.com/godirect/nd"
)

// This file holds the helpers of the data-path cases (CreateEndpoint, Send,
// Receive, Read, Write, Memory).

// query returns the adapter's limits.
func query(t testing.TB, a nd.Adapter) nd.AdapterInfo {
	t.Helper()
	info, err := a.Query()
	if err != nil {
		t.Fatalf("Query: %v", err)
	}
	return info
}

// fillPattern fills b with a byte sequence that differs between positions
// (so shifted or reordered data is caught) and between seeds.
func fillPattern(b []byte, seed byte) {
	for i := range b {
		b[i] = seed + byte(i) + byte(i>>8)*3 + byte(i>>16)*5 + 1
	}
}

// pattern returns n bytes of fillPattern(seed).
func pattern(n int, seed byte) []byte {
	b := make([]byte, n)
	fillPattern(b, seed)
	return b
}

// checkBytes fails the test unless got equals want byte for byte.
func checkBytes(t testing.TB, what string, got, want []byte) {
	t.Helper()
	if bytes.Equal(got, want) {
		return
	}
	if len(got) != len(want) {
		t.Fatalf("%s: %d bytes, want %d", what, len(got), len(want))
	}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("%s: byte %d = %#02x, want %#02x (first of the differences)", what, i, got[i], want[i])
		}
	}
}

// mustPost fails the test if a posting call returned an immediate error.
func mustPost(t testing.TB, what string, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: immediate error %v", what, err)
	}
}

// regBuf registers a fresh n-byte buffer filled with pattern(seed) on the
// side's adapter.
func regBuf(t testing.TB, s *Side, n int, seed byte) ([]byte, nd.MemoryRegion) {
	t.Helper()
	b := pattern(n, seed)
	return b, s.Register(t, b)
}

// one returns a one-entry scatter/gather list.
func one(buf []byte, mr nd.MemoryRegion) []nd.SGE {
	return []nd.SGE{{Buffer: buf, Region: mr}}
}

// postRecv posts a Receive of an n-byte registered buffer (nil list for 0)
// pre-filled with 0xEE, and returns its Result and buffer.
func postRecv(t testing.TB, s *Side, n int) (*nd.Result, []byte) {
	t.Helper()
	res := new(nd.Result)
	if n == 0 {
		mustPost(t, "Receive", s.Endpoint.Receive(res, nil))
		return res, nil
	}
	buf := bytes.Repeat([]byte{0xEE}, n)
	mr := s.Register(t, buf)
	mustPost(t, "Receive", s.Endpoint.Receive(res, one(buf, mr)))
	return res, buf
}

// postSend sends a registered copy of data (a zero-byte Send for empty
// data) and returns the Result.
func postSend(t testing.TB, s *Side, data []byte, flags nd.Flags) *nd.Result {
	t.Helper()
	res := new(nd.Result)
	var sgl []nd.SGE
	if len(data) > 0 {
		buf := append([]byte(nil), data...)
		sgl = one(buf, s.Register(t, buf))
	}
	mustPost(t, "Send", s.Endpoint.Send(res, sgl, flags))
	return res
}

// transfer sends data from one side to the other (which posts a Receive of
// exactly that size first), checks both completions and the bytes placed.
func transfer(t testing.TB, from, to *Side, data []byte) {
	t.Helper()
	rr, rbuf := postRecv(t, to, len(data))
	sr := postSend(t, from, data, 0)
	Expect(t, from.OutCQ, sr, nd.Success, len(data))
	Expect(t, to.InCQ, rr, nd.Success, len(data))
	checkBytes(t, "received bytes", rbuf, data)
}

// activeFirst makes the active side send first (the iWARP rule some
// transports enforce by holding the passive side's frames until then), so
// that the passive side may fail a request and terminate the connection.
func activeFirst(t testing.TB, pr *Pair) {
	t.Helper()
	transfer(t, pr.Active, pr.Passive, []byte{0xA5})
}

// bindWindow registers buf on the side, binds a new memory window to all of
// it with flags, waits for the Bind's completion and returns the window and
// descriptor. invalidate is passed to CreateMemoryWindow.
func bindWindow(t testing.TB, s *Side, buf []byte, flags nd.Flags, invalidate *nd.Result) (nd.MemoryRegion, nd.MemoryWindow, nd.MWDescriptor) {
	t.Helper()
	mr := s.Register(t, buf)
	mw := newWindow(t, s, invalidate)
	desc := bind(t, s, mr, mw, buf, flags)
	return mr, mw, desc
}

// newWindow creates an unbound memory window closed when the test ends.
func newWindow(t testing.TB, s *Side, invalidate *nd.Result) nd.MemoryWindow {
	t.Helper()
	mw, err := s.Adapter.CreateMemoryWindow(invalidate)
	if err != nil {
		t.Fatalf("CreateMemoryWindow: %v", err)
	}
	t.Cleanup(func() { mw.Close() })
	return mw
}

// bind binds mw to buf inside mr and waits for the Bind's Success
// completion.
func bind(t testing.TB, s *Side, mr nd.MemoryRegion, mw nd.MemoryWindow, buf []byte, flags nd.Flags) nd.MWDescriptor {
	t.Helper()
	res := new(nd.Result)
	desc, err := s.Endpoint.Bind(res, mr, mw, buf, flags)
	mustPost(t, "Bind", err)
	Expect(t, s.OutCQ, res, nd.Success, -1)
	if desc.Length != uint64(len(buf)) {
		t.Fatalf("Bind descriptor Length = %d, want %d", desc.Length, len(buf))
	}
	return desc
}

// invalidate invalidates mw and waits for the Success completion.
func invalidate(t testing.TB, s *Side, mw nd.MemoryWindow) {
	t.Helper()
	res := new(nd.Result)
	mustPost(t, "Invalidate", s.Endpoint.Invalidate(res, mw, 0))
	Expect(t, s.OutCQ, res, nd.Success, -1)
}

// rdmaRead reads n bytes at offset of remote into a fresh registered buffer
// and returns the Result (not yet completed) and the buffer.
func rdmaRead(t testing.TB, s *Side, remote nd.MWDescriptor, offset uint64, n int, flags nd.Flags) (*nd.Result, []byte) {
	t.Helper()
	res := new(nd.Result)
	var sgl []nd.SGE
	var buf []byte
	if n > 0 {
		buf = bytes.Repeat([]byte{0xEE}, n)
		sgl = one(buf, s.Register(t, buf))
	}
	mustPost(t, "Read", s.Endpoint.Read(res, sgl, remote, offset, flags))
	return res, buf
}

// rdmaWrite writes a registered copy of data to remote at offset and returns
// the Result (not yet completed).
func rdmaWrite(t testing.TB, s *Side, remote nd.MWDescriptor, offset uint64, data []byte, flags nd.Flags) *nd.Result {
	t.Helper()
	res := new(nd.Result)
	var sgl []nd.SGE
	if len(data) > 0 {
		buf := append([]byte(nil), data...)
		sgl = one(buf, s.Register(t, buf))
	}
	mustPost(t, "Write", s.Endpoint.Write(res, sgl, remote, offset, flags))
	return res
}

// expectTerminated checks that the connection of pr has ended after an
// error completion: NotifyDisconnect returns on both sides, the outstanding
// Receives given (of either side, in post order per side) complete with
// ErrCanceled, and later requests on either side are accepted and complete
// with ErrCanceled. The caller must have reaped every other completion.
func expectTerminated(t testing.TB, pr *Pair, activeRecvs, passiveRecvs []*nd.Result) {
	t.Helper()
	for _, s := range []*Side{pr.Active, pr.Passive} {
		if err := s.Connector.NotifyDisconnect(ctx(t)); err != nil {
			t.Fatalf("NotifyDisconnect after the connection was terminated: %v", err)
		}
	}
	for _, r := range activeRecvs {
		Expect(t, pr.Active.InCQ, r, nd.ErrCanceled, -1)
	}
	for _, r := range passiveRecvs {
		Expect(t, pr.Passive.InCQ, r, nd.ErrCanceled, -1)
	}
	for _, s := range []*Side{pr.Active, pr.Passive} {
		sr := new(nd.Result)
		mustPost(t, "Send after termination", s.Endpoint.Send(sr, nil, 0))
		Expect(t, s.OutCQ, sr, nd.ErrCanceled, -1)
		rr := new(nd.Result)
		mustPost(t, "Receive after termination", s.Endpoint.Receive(rr, nil))
		Expect(t, s.InCQ, rr, nd.ErrCanceled, -1)
	}
}

// expectSenderStatus waits for the sender's completion of a Send whose
// Receive failed at the peer: Success (the data left, as on iWARP) or
// ErrRemoteError (the peer's failure reported back) are both conforming.
func expectSenderStatus(t testing.TB, s *Side, res *nd.Result) {
	t.Helper()
	got := Wait(t, s.OutCQ)
	if got != res {
		t.Fatalf("GetResults returned %p, want the Send's own Result %p", got, res)
	}
	switch got.Status {
	case nd.Success, nd.ErrRemoteError:
		t.Logf("the sender's Send completed with %v", got.Status.Name())
	default:
		t.Fatalf("the sender's Send completed with %v, want ND_SUCCESS or ND_REMOTE_ERROR", got.Status)
	}
}

// skipIfTooBig skips the test when a buffer of n bytes is unreasonable to
// allocate for the suite.
func skipIfTooBig(t testing.TB, n int64, what string) {
	t.Helper()
	const limit = 512 << 20
	if n > limit {
		t.Skipf("%s needs %d bytes, more than the suite allocates (%d)", what, n, limit)
	}
}
