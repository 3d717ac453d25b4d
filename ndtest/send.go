package ndtest

import (
	"bytes"
	"context"
	"testing"

	"github.com/godirect/nd"
)

// sendCases check Endpoint.Send: zero-byte and gathered Sends, post order,
// inline data, the immediate errors (SGE count, queue depth, length, inline
// size, not connected, nil Result), silent success, solicited events and
// access violations that terminate the connection.
var sendCases = []testCase{
	{"ZeroByte", `docs/semantics.md "zero bytes": a Send of no SGE is a zero-byte message that consumes a Receive`, sendZeroByte},
	{"Gather", `docs/semantics.md "scatter/gather": the SGEs are gathered, in order, into one message`, sendGather},
	{"PostOrder", `docs/semantics.md "completion order": Sends complete, and their Receives are consumed, in post order`, sendPostOrder},
	{"Inline", `docs/semantics.md "inline data": inline bytes need no registration, and the buffer may be reused once Send returns`, sendInline},
	{"InlineMixed", `docs/semantics.md "inline data": registered and inline SGEs mix in one Send`, sendInlineMixed},
	{"InlineTooLong", `docs/semantics.md "inline data": inline bytes beyond the granted inline size fail ND_BUFFER_OVERFLOW, with no completion`, sendInlineTooLong},
	{"TooManySGEs", `docs/semantics.md "posting checks": more SGEs than OutboundSGE fail ND_DATA_OVERRUN, with no completion`, sendTooManySGEs},
	{"QueueFull", `docs/semantics.md "queue depth": a request beyond OutboundEntries not yet reaped fails ND_NO_MORE_ENTRIES`, sendQueueFull},
	{"TooLong", `docs/semantics.md "posting checks": a Send beyond MaxOutboundLength fails ND_BUFFER_OVERFLOW, with no completion`, sendTooLong},
	{"NotConnected", `docs/semantics.md "before the connection": on an endpoint not connected every request fails ND_CONNECTION_INVALID but Receive, which waits for the connection`, sendNotConnected},
	{"NilResult", `docs/semantics.md "posting checks": a request without a Result fails ND_INVALID_PARAMETER_1`, sendNilResult},
	{"SilentSuccess", `docs/semantics.md "silent success": ND_OP_FLAG_SILENT_SUCCESS suppresses the completion of a successful Send`, sendSilentSuccess},
	{"SilentQueue", `docs/semantics.md "silent success": a silent request holds its queue entry until the transport learns it was done, then frees it without a completion`, runSilentQueue},
	{"SilentFailure", `docs/semantics.md "silent success": a silent Send that fails still completes, with its error`, sendSilentFailure},
	{"SolicitedEvent", `docs/semantics.md "Notify": ND_OP_FLAG_SEND_AND_SOLICIT_EVENT fires the peer's ND_CQ_NOTIFY_SOLICITED; a plain Send does not`, sendSolicitedEvent},
	{"SolicitedNotifyFiresOnError", `docs/semantics.md "Notify": an error completion fires ND_CQ_NOTIFY_SOLICITED`, sendSolicitedNotifyFiresOnError},
	{"AccessViolation", `docs/semantics.md "bad local SGE": a local buffer outside its registration completes ND_ACCESS_VIOLATION and ends the connection`, sendAccessViolation},
}

func sendZeroByte(t *testing.T, p nd.Provider) {
	pr := NewPair(t, p, PairConfig{})
	rr, rbuf := postRecv(t, pr.Passive, 16)
	sr := new(nd.Result)
	mustPost(t, "Send(nil)", pr.Active.Endpoint.Send(sr, nil, 0))
	Expect(t, pr.Active.OutCQ, sr, nd.Success, 0)
	Expect(t, pr.Passive.InCQ, rr, nd.Success, 0)
	checkBytes(t, "Receive buffer after a zero-byte Send", rbuf, bytes.Repeat([]byte{0xEE}, 16))
}

func sendGather(t *testing.T, p nd.Provider) {
	pr := NewPair(t, p, PairConfig{})
	a, amr := regBuf(t, pr.Active, 300, 1)
	b, bmr := regBuf(t, pr.Active, 300, 2)
	sgl := []nd.SGE{{Buffer: a[10:27], Region: amr}, {Buffer: b[200:300], Region: bmr}, {Buffer: a[0:1], Region: amr}, {Buffer: b[5:69], Region: bmr}}
	var want []byte
	for _, e := range sgl {
		want = append(want, e.Buffer...)
	}
	rr, rbuf := postRecv(t, pr.Passive, len(want)+10)
	sr := new(nd.Result)
	mustPost(t, "Send(4 SGEs)", pr.Active.Endpoint.Send(sr, sgl, 0))
	Expect(t, pr.Active.OutCQ, sr, nd.Success, len(want))
	Expect(t, pr.Passive.InCQ, rr, nd.Success, len(want))
	checkBytes(t, "gathered bytes", rbuf[:len(want)], want)
	checkBytes(t, "Receive bytes beyond the message", rbuf[len(want):], []byte{0xEE, 0xEE, 0xEE, 0xEE, 0xEE, 0xEE, 0xEE, 0xEE, 0xEE, 0xEE})
}

func sendPostOrder(t *testing.T, p nd.Provider) {
	pr := NewPair(t, p, PairConfig{})
	const n = 8
	var recvs [n]*nd.Result
	var rbufs [n][]byte
	for i := range n {
		recvs[i], rbufs[i] = postRecv(t, pr.Passive, 64)
	}
	var sends [n]*nd.Result
	var msgs [n][]byte
	for i := range n {
		msgs[i] = pattern(1+i*7, byte(i))
		sends[i] = postSend(t, pr.Active, msgs[i], 0)
	}
	for i := range n {
		Expect(t, pr.Active.OutCQ, sends[i], nd.Success, len(msgs[i]))
	}
	for i := range n {
		Expect(t, pr.Passive.InCQ, recvs[i], nd.Success, len(msgs[i]))
		checkBytes(t, "message", rbufs[i][:len(msgs[i])], msgs[i])
	}
}

func sendInline(t *testing.T, p nd.Provider) {
	pr := NewPair(t, p, PairConfig{})
	n := min(pr.Active.Inline, 64)
	if n == 0 {
		t.Skip("the endpoint grants no inline data")
	}
	src := pattern(n, 3)
	want := append([]byte(nil), src...)
	rr, rbuf := postRecv(t, pr.Passive, n)
	sr := new(nd.Result)
	mustPost(t, "inline Send", pr.Active.Endpoint.Send(sr, []nd.SGE{{Buffer: src}}, 0))
	for i := range src { // the caller may reuse inline bytes at once
		src[i] = ^src[i]
	}
	Expect(t, pr.Active.OutCQ, sr, nd.Success, n)
	Expect(t, pr.Passive.InCQ, rr, nd.Success, n)
	checkBytes(t, "inline bytes received", rbuf, want)
}

func sendInlineMixed(t *testing.T, p nd.Provider) {
	pr := NewPair(t, p, PairConfig{})
	n := min(pr.Active.Inline, 32)
	if n == 0 {
		t.Skip("the endpoint grants no inline data")
	}
	src := pattern(n, 4)
	reg, mr := regBuf(t, pr.Active, 50, 5)
	want := append(append([]byte(nil), reg...), src...)
	rr, rbuf := postRecv(t, pr.Passive, len(want))
	sr := new(nd.Result)
	mustPost(t, "Send(registered + inline SGE)", pr.Active.Endpoint.Send(sr, []nd.SGE{{Buffer: reg, Region: mr}, {Buffer: src}}, 0))
	clear(src)
	Expect(t, pr.Active.OutCQ, sr, nd.Success, len(want))
	Expect(t, pr.Passive.InCQ, rr, nd.Success, len(want))
	checkBytes(t, "received bytes", rbuf, want)
}

func sendInlineTooLong(t *testing.T, p nd.Provider) {
	pr := NewPair(t, p, PairConfig{})
	n := pr.Active.Inline
	err := pr.Active.Endpoint.Send(new(nd.Result), []nd.SGE{{Buffer: make([]byte, n+1)}}, 0)
	expectStatus(t, "Send with MaxInlineData+1 inline bytes", err, nd.ErrBufferOverflow)
	if n >= 1 {
		half := make([]byte, n/2+1)
		err = pr.Active.Endpoint.Send(new(nd.Result), []nd.SGE{{Buffer: half}, {Buffer: make([]byte, n-len(half)+1)}}, 0)
		expectStatus(t, "Send with MaxInlineData+1 inline bytes in two SGEs", err, nd.ErrBufferOverflow)
	}
	ExpectEmpty(t, pr.Active.OutCQ)
	transfer(t, pr.Active, pr.Passive, pattern(10, 6)) // the endpoint is unaffected
}

func sendTooManySGEs(t *testing.T, p nd.Provider) {
	pr := NewPair(t, p, PairConfig{})
	buf, mr := regBuf(t, pr.Active, 64, 7)
	sgl := make([]nd.SGE, DefaultLimits.OutboundSGE+1)
	for i := range sgl {
		sgl[i] = nd.SGE{Buffer: buf[i : i+1], Region: mr}
	}
	err := pr.Active.Endpoint.Send(new(nd.Result), sgl, 0)
	expectStatus(t, "Send with OutboundSGE+1 entries", err, nd.ErrDataOverrun)
	ExpectEmpty(t, pr.Active.OutCQ)
	// Exactly OutboundSGE entries are fine, and the endpoint works.
	rr, rbuf := postRecv(t, pr.Passive, 64)
	sr := new(nd.Result)
	mustPost(t, "Send with OutboundSGE entries", pr.Active.Endpoint.Send(sr, sgl[:DefaultLimits.OutboundSGE], 0))
	Expect(t, pr.Active.OutCQ, sr, nd.Success, DefaultLimits.OutboundSGE)
	Expect(t, pr.Passive.InCQ, rr, nd.Success, DefaultLimits.OutboundSGE)
	checkBytes(t, "received", rbuf[:DefaultLimits.OutboundSGE], buf[:DefaultLimits.OutboundSGE])
}

// A request is outstanding, and holds its slot of OutboundEntries, until
// GetResults hands its Result back: the Result belongs to the provider
// until then, and this is what lets a client size a completion queue
// by the sum of its endpoints' depths so that it cannot overrun.
func sendQueueFull(t *testing.T, p nd.Provider) {
	const depth = 4
	l := DefaultLimits
	l.OutboundEntries = depth
	pr := NewPair(t, p, PairConfig{ActiveLimits: l})
	var recvs [depth + 1]*nd.Result
	for i := range recvs {
		recvs[i], _ = postRecv(t, pr.Passive, 0)
	}
	var sends [depth]*nd.Result
	for i := range sends {
		sends[i] = new(nd.Result)
		mustPost(t, "Send within OutboundEntries", pr.Active.Endpoint.Send(sends[i], nil, 0))
	}
	extra := new(nd.Result)
	err := pr.Active.Endpoint.Send(extra, nil, 0)
	expectStatus(t, "Send with OutboundEntries earlier Sends not yet reaped", err, nd.ErrNoMoreEntries)
	for i := range sends {
		Expect(t, pr.Active.OutCQ, sends[i], nd.Success, 0)
	}
	ExpectEmpty(t, pr.Active.OutCQ)
	mustPost(t, "Send after the queue drained", pr.Active.Endpoint.Send(extra, nil, 0))
	Expect(t, pr.Active.OutCQ, extra, nd.Success, 0)
	for _, r := range recvs {
		Expect(t, pr.Passive.InCQ, r, nd.Success, 0)
	}
}

func sendTooLong(t *testing.T, p nd.Provider) {
	pr := NewPair(t, p, PairConfig{})
	info := query(t, pr.Active.Adapter)
	n := DefaultLimits.OutboundSGE
	per := info.MaxOutboundLength/n + 1 // n entries of per bytes exceed the maximum
	skipIfTooBig(t, int64(per), "a Send beyond MaxOutboundLength")
	if per > info.MaxRegistrationSize {
		t.Skipf("MaxOutboundLength %d cannot be exceeded with %d SGEs of one registration (MaxRegistrationSize %d)", info.MaxOutboundLength, n, info.MaxRegistrationSize)
	}
	buf := make([]byte, per)
	mr := pr.Active.Register(t, buf)
	sgl := make([]nd.SGE, n)
	for i := range sgl {
		sgl[i] = nd.SGE{Buffer: buf, Region: mr}
	}
	err := pr.Active.Endpoint.Send(new(nd.Result), sgl, 0)
	expectStatus(t, "Send of MaxOutboundLength+ bytes", err, nd.ErrBufferOverflow)
	ExpectEmpty(t, pr.Active.OutCQ)
	transfer(t, pr.Active, pr.Passive, pattern(10, 8))
}

func sendNotConnected(t *testing.T, p nd.Provider) {
	a, _ := OpenAdapters(t, p)
	s := NewSide(t, a, DefaultLimits, 64, false)
	buf, mr := regBuf(t, s, 64, 9)
	sgl := one(buf, mr)
	remote := nd.MWDescriptor{Base: 0x1000, Length: 64, Token: 1}
	mw := newWindow(t, s, nil)
	t.Run("Send", func(t *testing.T) {
		expectStatus(t, "Send", s.Endpoint.Send(new(nd.Result), sgl, 0), nd.ErrConnectionInvalid)
	})
	t.Run("SendAndInvalidate", func(t *testing.T) {
		expectStatus(t, "SendAndInvalidate", s.Endpoint.SendAndInvalidate(new(nd.Result), sgl, remote, 0), nd.ErrConnectionInvalid)
	})
	t.Run("Read", func(t *testing.T) {
		expectStatus(t, "Read", s.Endpoint.Read(new(nd.Result), sgl, remote, 0, 0), nd.ErrConnectionInvalid)
	})
	t.Run("Write", func(t *testing.T) {
		expectStatus(t, "Write", s.Endpoint.Write(new(nd.Result), sgl, remote, 0, 0), nd.ErrConnectionInvalid)
	})
	t.Run("Bind", func(t *testing.T) {
		_, err := s.Endpoint.Bind(new(nd.Result), mr, mw, buf, nd.FlagAllowRead)
		expectStatus(t, "Bind", err, nd.ErrConnectionInvalid)
	})
	t.Run("Invalidate", func(t *testing.T) {
		expectStatus(t, "Invalidate", s.Endpoint.Invalidate(new(nd.Result), mw, 0), nd.ErrConnectionInvalid)
	})
	t.Run("ReceiveAccepted", func(t *testing.T) {
		expectStatus(t, "Receive", s.Endpoint.Receive(new(nd.Result), sgl), nd.Success)
	})
	ExpectEmpty(t, s.OutCQ)
	ExpectEmpty(t, s.InCQ)
}

func sendNilResult(t *testing.T, p nd.Provider) {
	pr := NewPair(t, p, PairConfig{})
	a := pr.Active
	buf, mr := regBuf(t, a, 64, 10)
	sgl := one(buf, mr)
	_, _, remote := bindWindow(t, pr.Passive, pattern(64, 11), nd.FlagAllowRead|nd.FlagAllowWrite, nil)
	wbuf := pattern(64, 12)
	_, ownMW, _ := bindWindow(t, a, wbuf, nd.FlagAllowRead, nil)
	spare := newWindow(t, a, nil)
	expectStatus(t, "Send(nil Result)", a.Endpoint.Send(nil, sgl, 0), nd.ErrInvalidParameter1)
	expectStatus(t, "SendAndInvalidate(nil Result)", a.Endpoint.SendAndInvalidate(nil, sgl, remote, 0), nd.ErrInvalidParameter1)
	expectStatus(t, "Receive(nil Result)", a.Endpoint.Receive(nil, sgl), nd.ErrInvalidParameter1)
	expectStatus(t, "Read(nil Result)", a.Endpoint.Read(nil, sgl, remote, 0, 0), nd.ErrInvalidParameter1)
	expectStatus(t, "Write(nil Result)", a.Endpoint.Write(nil, sgl, remote, 0, 0), nd.ErrInvalidParameter1)
	_, err := a.Endpoint.Bind(nil, mr, spare, buf, nd.FlagAllowRead)
	expectStatus(t, "Bind(nil Result)", err, nd.ErrInvalidParameter1)
	expectStatus(t, "Invalidate(nil Result)", a.Endpoint.Invalidate(nil, ownMW, 0), nd.ErrInvalidParameter1)
	ExpectEmpty(t, a.OutCQ)
	ExpectEmpty(t, a.InCQ)
	transfer(t, a, pr.Passive, pattern(20, 13))
}

func sendSilentSuccess(t *testing.T, p nd.Provider) {
	pr := NewPair(t, p, PairConfig{})
	r1, b1 := postRecv(t, pr.Passive, 32)
	r2, b2 := postRecv(t, pr.Passive, 32)
	m1, m2 := pattern(32, 14), pattern(20, 15)
	postSend(t, pr.Active, m1, nd.FlagSilentSuccess)
	s2 := postSend(t, pr.Active, m2, 0)
	Expect(t, pr.Active.OutCQ, s2, nd.Success, len(m2)) // the silent Send produced nothing
	ExpectEmpty(t, pr.Active.OutCQ)
	Expect(t, pr.Passive.InCQ, r1, nd.Success, len(m1))
	Expect(t, pr.Passive.InCQ, r2, nd.Success, len(m2))
	checkBytes(t, "silent Send's bytes", b1, m1)
	checkBytes(t, "second Send's bytes", b2[:len(m2)], m2)
}

func sendSilentFailure(t *testing.T, p nd.Provider) {
	pr := NewPair(t, p, PairConfig{})
	ar, _ := postRecv(t, pr.Active, 8)
	pRecv, _ := postRecv(t, pr.Passive, 64)
	_, mr := regBuf(t, pr.Active, 64, 16)
	sr := new(nd.Result)
	mustPost(t, "silent Send outside its region", pr.Active.Endpoint.Send(sr, one(make([]byte, 16), mr), nd.FlagSilentSuccess))
	expectAccessViolation(t, pr.Active.OutCQ, sr, nd.CauseLocalAccess)
	expectTerminated(t, pr, []*nd.Result{ar}, []*nd.Result{pRecv})
}

func sendSolicitedEvent(t *testing.T, p nd.Provider) {
	pr := NewPair(t, p, PairConfig{})
	cq := pr.Passive.InCQ
	r1, _ := postRecv(t, pr.Passive, 16)
	r2, b2 := postRecv(t, pr.Passive, 16)
	ExpectEmpty(t, cq)
	nctx, cancel := context.WithTimeout(context.Background(), Timeout)
	notify := start("Notify(NotifySolicited)", func() error { return cq.Notify(nctx, nd.NotifySolicited) })
	t.Cleanup(func() { cancel(); <-notify.done })
	notify.parked(t)

	// A plain Send: its Receive completion, reaped without Notify,
	// must not satisfy NotifySolicited.
	plain := postSend(t, pr.Active, pattern(16, 17), 0)
	Expect(t, pr.Active.OutCQ, plain, nd.Success, 16)
	if got := pollFor(t, cq); got != r1 || got.Status != nd.Success || got.BytesTransferred != 16 {
		t.Fatalf("first Receive: %p %v %d bytes, want %p success 16 bytes", got, got.Status, got.BytesTransferred, r1)
	}
	// Still blocked: a Notify woken by the completion would now be
	// runnable or returned, never parked again.
	notify.parked(t)
	notify.notReturned(t, "an unsolicited Receive completion does not satisfy NotifySolicited")

	msg := pattern(16, 18)
	solicited := postSend(t, pr.Active, msg, nd.FlagSendAndSolicitEvent)
	if err := notify.wait(t); err != nil {
		t.Fatalf("Notify(NotifySolicited) = %v, want nil after the Receive of a Send with FlagSendAndSolicitEvent", err)
	}
	Expect(t, pr.Active.OutCQ, solicited, nd.Success, 16)
	Expect(t, cq, r2, nd.Success, 16)
	checkBytes(t, "solicited message", b2, msg)
}

func sendSolicitedNotifyFiresOnError(t *testing.T, p nd.Provider) {
	pr := NewPair(t, p, PairConfig{})
	cq := pr.Active.OutCQ
	ar, _ := postRecv(t, pr.Active, 8)
	pRecv, _ := postRecv(t, pr.Passive, 64)
	ExpectEmpty(t, cq)
	nctx, cancel := context.WithTimeout(context.Background(), Timeout)
	notify := start("Notify(NotifySolicited)", func() error { return cq.Notify(nctx, nd.NotifySolicited) })
	t.Cleanup(func() { cancel(); <-notify.done })
	notify.parked(t)
	_, mr := regBuf(t, pr.Active, 64, 19)
	sr := new(nd.Result)
	mustPost(t, "Send outside its region", pr.Active.Endpoint.Send(sr, one(make([]byte, 16), mr), 0))
	if err := notify.wait(t); err != nil {
		t.Fatalf("Notify(NotifySolicited) = %v, want nil after an error completion", err)
	}
	expectAccessViolation(t, cq, sr, nd.CauseLocalAccess)
	expectTerminated(t, pr, []*nd.Result{ar}, []*nd.Result{pRecv})
}

func sendAccessViolation(t *testing.T, p nd.Provider) {
	cases := []struct {
		name string
		sgl  func(t *testing.T, pr *Pair) []nd.SGE
	}{
		{"OutsideRegion", func(t *testing.T, pr *Pair) []nd.SGE {
			_, mr := regBuf(t, pr.Active, 64, 20)
			return one(pattern(16, 21), mr)
		}},
		{"StraddlesRegionEnd", func(t *testing.T, pr *Pair) []nd.SGE {
			buf := pattern(64, 22)
			mr := pr.Active.Register(t, buf[:32])
			return one(buf[24:40], mr)
		}},
		{"DeregisteredRegion", func(t *testing.T, pr *Pair) []nd.SGE {
			buf := pattern(64, 23)
			mr, err := pr.Active.Adapter.RegisterMemory(ctx(t), buf)
			if err != nil {
				t.Fatalf("RegisterMemory: %v", err)
			}
			if err := pr.Active.Adapter.DeregisterMemory(ctx(t), mr); err != nil {
				t.Fatalf("DeregisterMemory: %v", err)
			}
			return one(buf, mr)
		}},
		{"ForeignRegion", func(t *testing.T, pr *Pair) []nd.SGE {
			buf, mr := regBuf(t, pr.Passive, 64, 24) // the peer's adapter
			return one(buf, mr)
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			pr := NewPair(t, p, PairConfig{})
			ar, _ := postRecv(t, pr.Active, 8)
			pRecv, _ := postRecv(t, pr.Passive, 64)
			sr := new(nd.Result)
			mustPost(t, "Send", pr.Active.Endpoint.Send(sr, c.sgl(t, pr), 0))
			expectAccessViolation(t, pr.Active.OutCQ, sr, nd.CauseLocalAccess)
			expectTerminated(t, pr, []*nd.Result{ar}, []*nd.Result{pRecv})
			expectReason(t, pr.Active.Connector, "a Send with a bad local entry", &nd.DisconnectError{Op: "Send", Status: nd.ErrAccessViolation, Cause: nd.CauseLocalAccess})
		})
	}
}
