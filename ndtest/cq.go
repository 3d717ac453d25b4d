package ndtest

import (
	"context"
	"testing"

	"github.com/godirect/nd"
)

// The CQ cases watch the passive side's inbound queue of a connected pair;
// completions are made by the active side's Sends into Receives the passive
// side posted (the active side sends first, as iWARP wants).

// cqCases check a CompletionQueue: Notify of each type, its cancellation
// and its end at Close, overrun, Resize and GetResults.
var cqCases = []testCase{
	{"NotifyAny/FiresOnNextCompletion", `docs/semantics.md "Notify": ND_CQ_NOTIFY_ANY completes on the next completion`, cqNotifyAnyFiresOnNextCompletion},
	{"NotifyAny/CompletionBeforeNotify", `docs/semantics.md "Notify": a completion already queued when Notify is called completes it at once`, cqNotifyAnyCompletionBeforeNotify},
	{"NotifyAny/FiredCompletionDoesNotFireAgain", `docs/semantics.md "Notify": a completion fires one Notify only`, cqNotifyAnyFiredCompletionDoesNotFireAgain},
	{"NotifyAny/OneFiringCompletesAllWaiters", `docs/semantics.md "Notify": one completion completes every Notify waiting on the queue`, cqNotifyAnyOneFiringCompletesAllWaiters},
	{"NotifySolicited/NotFiredByOrdinaryCompletion", `docs/semantics.md "Notify": ND_CQ_NOTIFY_SOLICITED ignores completions that were not solicited`, cqNotifySolicitedNotFiredByOrdinaryCompletion},
	{"NotifySolicited/FiredByErrorCompletion", `docs/semantics.md "Notify": an error completion fires ND_CQ_NOTIFY_SOLICITED`, cqNotifySolicitedFiredByErrorCompletion},
	{"NotifyErrors/NotFiredByCompletion", `docs/semantics.md "Notify": ND_CQ_NOTIFY_ERRORS ignores successful completions`, cqNotifyErrorsNotFiredByCompletion},
	{"Notify/ContextCanceled", `docs/semantics.md "cancel": a canceled Notify returns ND_CANCELED`, cqNotifyContextCanceled},
	{"Notify/CancelOrder", `docs/semantics.md "cancel": canceled Notifies return ND_CANCELED and a later Notify still fires`, cqNotifyCancelOrder},
	{"Close/WaitingNotifyCanceled", `docs/semantics.md "CompletionQueue": closing the queue completes a waiting Notify with ND_CANCELED`, cqCloseWaitingNotifyCanceled},
	{"Overrun", `docs/semantics.md "CQ overrun": completions beyond the queue's size overrun it; Notify then reports ND_BUFFER_OVERFLOW`, testOverrun},
	{"Resize", `docs/semantics.md "queue size": resizing keeps the queued completions; below them it fails ND_BUFFER_OVERFLOW, beyond MaxCQEntries ND_INVALID_PARAMETER`, testResize},
	{"GetResults/AtMostLen", `docs/semantics.md "GetResults": returns at most as many Results as asked for, oldest first`, testGetResultsLen},
	{"GetResults/SharedCQPerEndpointOrder", `docs/semantics.md "completion order": on a queue shared by endpoints each endpoint's completions keep its post order`, testSharedCQOrder},
}

func cqNotifyAnyFiresOnNextCompletion(t *testing.T, p nd.Provider) {
	e := newCQEnv(t, p)
	r := e.recv(t)
	ExpectEmpty(t, e.cq)
	n := startNotify(t, e.cq, nd.NotifyAny)
	n.parked(t)
	e.send(t, 0)
	expectStatus(t, "Notify(NotifyAny)", n.wait(t), nd.Success)
	wantResult(t, pollFor(t, e.cq), r, nd.Success, cqMsg)
}

func cqNotifyAnyCompletionBeforeNotify(t *testing.T, p nd.Provider) {
	// The race rule: GetResults found the queue empty, a completion
	// arrived, then Notify was called: it fires at once.
	e := newCQEnv(t, p)
	r := e.recv(t)
	ExpectEmpty(t, e.cq)
	e.send(t, 0)
	expectStatus(t, "Notify(NotifyAny) after a completion arrived", e.cq.Notify(ctx(t), nd.NotifyAny), nd.Success)
	wantResult(t, pollFor(t, e.cq), r, nd.Success, cqMsg)
}

func cqNotifyAnyFiredCompletionDoesNotFireAgain(t *testing.T, p nd.Provider) {
	e := newCQEnv(t, p)
	r1, r2 := e.recv(t), e.recv(t)
	ExpectEmpty(t, e.cq)
	n1 := startNotify(t, e.cq, nd.NotifyAny)
	n1.parked(t)
	e.send(t, 0)
	expectStatus(t, "first Notify", n1.wait(t), nd.Success)
	// The first completion, still queued, already fired a notification.
	n2 := startNotify(t, e.cq, nd.NotifyAny)
	n2.parked(t)
	e.send(t, 0)
	expectStatus(t, "second Notify", n2.wait(t), nd.Success)
	e.expectResults(t, r1, r2)
}

func cqNotifyAnyOneFiringCompletesAllWaiters(t *testing.T, p nd.Provider) {
	e := newCQEnv(t, p)
	r := e.recv(t)
	ExpectEmpty(t, e.cq)
	var ns [3]*call
	for i := range ns {
		ns[i] = startNotify(t, e.cq, nd.NotifyAny)
		ns[i].parked(t)
	}
	e.send(t, 0)
	for i, n := range ns {
		expectStatus(t, "Notify #"+string(rune('1'+i)), n.wait(t), nd.Success)
	}
	// That completion has fired: a new Notify waits.
	c, cancel := cancelableCtx(t)
	late := start("Notify", func() error { return e.cq.Notify(c, nd.NotifyAny) })
	late.parked(t)
	cancel()
	expectCanceled(t, "Notify after the firing", late.wait(t))
	wantResult(t, pollFor(t, e.cq), r, nd.Success, cqMsg)
}

func cqNotifySolicitedNotFiredByOrdinaryCompletion(t *testing.T, p nd.Provider) {
	e := newCQEnv(t, p)
	r1, r2 := e.recv(t), e.recv(t)
	ExpectEmpty(t, e.cq)
	n := startNotify(t, e.cq, nd.NotifySolicited)
	n.parked(t)
	e.send(t, 0)
	wantResult(t, pollFor(t, e.cq), r1, nd.Success, cqMsg)
	n.notReturned(t, "an ordinary Receive completion does not satisfy NotifySolicited")
	e.send(t, nd.FlagSendAndSolicitEvent)
	expectStatus(t, "Notify(NotifySolicited) after a solicited Send", n.wait(t), nd.Success)
	wantResult(t, pollFor(t, e.cq), r2, nd.Success, cqMsg)
}

func cqNotifySolicitedFiredByErrorCompletion(t *testing.T, p nd.Provider) {
	e := newCQEnv(t, p)
	r := e.recv(t)
	ExpectEmpty(t, e.cq)
	n := startNotify(t, e.cq, nd.NotifySolicited)
	n.parked(t)
	if err := e.pr.Passive.Endpoint.Flush(); err != nil {
		t.Fatalf("Flush: %v", err)
	}
	expectStatus(t, "Notify(NotifySolicited) after an error completion", n.wait(t), nd.Success)
	wantResult(t, pollFor(t, e.cq), r, nd.ErrCanceled, -1)
}

func cqNotifyErrorsNotFiredByCompletion(t *testing.T, p nd.Provider) {
	e := newCQEnv(t, p)
	r := e.recv(t)
	ExpectEmpty(t, e.cq)
	c, cancel := cancelableCtx(t)
	n := start("Notify(NotifyErrors)", func() error { return e.cq.Notify(c, nd.NotifyErrors) })
	n.parked(t)
	e.send(t, 0)
	wantResult(t, pollFor(t, e.cq), r, nd.Success, cqMsg)
	n.notReturned(t, "a completion is not an error of the queue")
	cancel()
	expectCanceled(t, "Notify(NotifyErrors) canceled", n.wait(t))
}

func cqNotifyContextCanceled(t *testing.T, p nd.Provider) {
	e := newCQEnv(t, p)
	r := e.recv(t)
	ExpectEmpty(t, e.cq)
	c, cancel := cancelableCtx(t)
	n := start("Notify", func() error { return e.cq.Notify(c, nd.NotifyAny) })
	n.parked(t)
	cancel()
	expectCanceled(t, "Notify with its context canceled", n.wait(t))
	// The queue still notifies.
	n2 := startNotify(t, e.cq, nd.NotifyAny)
	n2.parked(t)
	e.send(t, 0)
	expectStatus(t, "Notify after a canceled one", n2.wait(t), nd.Success)
	wantResult(t, pollFor(t, e.cq), r, nd.Success, cqMsg)
}

func cqNotifyCancelOrder(t *testing.T, p nd.Provider) {
	// ndcq: two Notify calls on one queue, canceled in order and in
	// reverse order, repeatedly; each cancel ends only its own call.
	e := newCQEnv(t, p)
	for i := range 10 {
		var ns [2]*call
		var cancels [2]context.CancelFunc
		for k := range ns {
			c, cancel := cancelableCtx(t)
			cancels[k] = cancel
			ns[k] = start("Notify", func() error { return e.cq.Notify(c, nd.NotifyAny) })
			ns[k].parked(t)
		}
		first := i % 2 // in order, then reverse order
		cancels[first]()
		expectCanceled(t, "the Notify canceled first", ns[first].wait(t))
		ns[1-first].notReturned(t, "its own context is not canceled")
		cancels[1-first]()
		expectCanceled(t, "the Notify canceled second", ns[1-first].wait(t))
	}
	r := e.recv(t)
	n := startNotify(t, e.cq, nd.NotifyAny)
	n.parked(t)
	e.send(t, 0)
	expectStatus(t, "Notify after the canceled ones", n.wait(t), nd.Success)
	wantResult(t, pollFor(t, e.cq), r, nd.Success, cqMsg)
}

func cqCloseWaitingNotifyCanceled(t *testing.T, p nd.Provider) {
	a, _ := OpenAdapters(t, p)
	cq := mustCQ(t, a, 4)
	n := startNotify(t, cq, nd.NotifyAny)
	n.parked(t)
	if err := cq.Close(); err != nil {
		t.Fatalf("CompletionQueue.Close: %v", err)
	}
	expectStatus(t, "Notify waiting across Close", n.wait(t), nd.ErrCanceled)
}

const cqMsg = 16 // bytes of each Send the CQ cases make

// cqEnv is a connected pair whose passive inbound queue (cq) the case
// watches.
type cqEnv struct {
	pr   *Pair
	cq   nd.CompletionQueue
	out  buffer // the active side's Send buffer
	bufs []buffer
}

func newCQEnv(t *testing.T, p nd.Provider) *cqEnv {
	t.Helper()
	pr := NewPair(t, p, PairConfig{})
	return &cqEnv{pr: pr, cq: pr.Passive.InCQ, out: newBuffer(t, pr.Active, cqMsg)}
}

// recv posts a Receive on the passive side and returns its Result.
func (e *cqEnv) recv(t *testing.T) *nd.Result {
	t.Helper()
	b := newBuffer(t, e.pr.Passive, cqMsg)
	e.bufs = append(e.bufs, b)
	r := new(nd.Result)
	recvBuf(t, e.pr.Passive, b, r)
	return r
}

// send makes the active side Send one message and reaps its completion.
func (e *cqEnv) send(t *testing.T, flags nd.Flags) {
	t.Helper()
	var r nd.Result
	sendBuf(t, e.pr.Active, e.out, &r, flags)
	Expect(t, e.pr.Active.OutCQ, &r, nd.Success, cqMsg)
}

// expectResults checks that cq now holds exactly want, in order, all
// successful.
func (e *cqEnv) expectResults(t *testing.T, want ...*nd.Result) {
	t.Helper()
	for _, w := range want {
		wantResult(t, pollFor(t, e.cq), w, nd.Success, cqMsg)
	}
	ExpectEmpty(t, e.cq)
}

func startNotify(t testing.TB, cq nd.CompletionQueue, typ nd.NotifyType) *call {
	c := ctx(t)
	return start("Notify", func() error { return cq.Notify(c, typ) })
}

// flushedSide is an unconnected side on one shared queue of cqEntries with n
// Receives posted and then flushed, so that n ErrCanceled completions are
// (or are being) queued. It returns the side and the Results in post order.
func flushedSide(t *testing.T, a nd.Adapter, cqEntries, n int, before func(*Side)) (*Side, []*nd.Result) {
	t.Helper()
	limits := DefaultLimits
	limits.InboundEntries = n
	s := NewSide(t, a, limits, cqEntries, true)
	if before != nil {
		before(s)
	}
	b := newBuffer(t, s, 8*n)
	rs := make([]*nd.Result, n)
	for i := range rs {
		rs[i] = new(nd.Result)
		if err := s.Endpoint.Receive(rs[i], []nd.SGE{{Buffer: b.b[8*i : 8*i+8], Region: b.mr}}); err != nil {
			t.Fatalf("Receive #%d: %v", i+1, err)
		}
	}
	if err := s.Endpoint.Flush(); err != nil {
		t.Fatalf("Flush: %v", err)
	}
	return s, rs
}

func testOverrun(t *testing.T, p nd.Provider) {
	a, _ := OpenAdapters(t, p)
	var n *call
	s, _ := flushedSide(t, a, 2, 3, func(s *Side) {
		n = startNotify(t, s.InCQ, nd.NotifyErrors)
		n.parked(t)
	})
	expectStatus(t, "Notify(NotifyErrors) waiting when 3 completions hit a queue of 2", n.wait(t), nd.ErrBufferOverflow)
	expectStatus(t, "Notify(NotifyAny) on the overrun queue", s.InCQ.Notify(ctx(t), nd.NotifyAny), nd.ErrBufferOverflow)
	expectStatus(t, "Notify(NotifyErrors) on the overrun queue", s.InCQ.Notify(ctx(t), nd.NotifyErrors), nd.ErrBufferOverflow)
}

func testResize(t *testing.T, p nd.Provider) {
	a, _ := OpenAdapters(t, p)
	info := query(t, a)
	if info.Flags&nd.AdapterCQResize == 0 {
		t.Skip("the adapter does not report AdapterCQResize")
	}
	s, rs := flushedSide(t, a, 8, 3, nil)
	cq := s.InCQ
	expectStatus(t, "Notify after Flush", cq.Notify(ctx(t), nd.NotifyAny), nd.Success)
	expectStatus(t, "Resize(2) with 3 completions queued", cq.Resize(2), nd.ErrBufferOverflow)
	expectStatus(t, "Resize(MaxCQEntries+1)", cq.Resize(info.MaxCQEntries+1), nd.ErrInvalidParameter)
	expectStatus(t, "Resize(3) with 3 completions queued", cq.Resize(3), nd.Success)
	expectStatus(t, "Resize(32)", cq.Resize(32), nd.Success)
	out := make([]*nd.Result, 8)
	if got := cq.GetResults(out); got != len(rs) {
		t.Fatalf("GetResults after Resize returned %d completions; want %d", got, len(rs))
	}
	for i, r := range rs {
		wantResult(t, out[i], r, nd.ErrCanceled, -1)
	}
}

func testGetResultsLen(t *testing.T, p nd.Provider) {
	a, _ := OpenAdapters(t, p)
	s, rs := flushedSide(t, a, 8, 3, nil)
	cq := s.InCQ
	expectStatus(t, "Notify after Flush", cq.Notify(ctx(t), nd.NotifyAny), nd.Success)
	if n := cq.GetResults(nil); n != 0 {
		t.Fatalf("GetResults(nil) = %d; want 0", n)
	}
	sentinel := new(nd.Result)
	var got []*nd.Result
	for len(got) < len(rs) {
		out := []*nd.Result{sentinel, sentinel, sentinel}
		n := cq.GetResults(out[:2])
		if n > 2 {
			t.Fatalf("GetResults with room for 2 returned %d", n)
		}
		if out[2] != sentinel {
			t.Fatal("GetResults wrote past the slice it was given")
		}
		got = append(got, out[:n]...)
		if n == 0 {
			got = append(got, Wait(t, cq))
		}
	}
	for i, r := range rs {
		wantResult(t, got[i], r, nd.ErrCanceled, -1)
	}
	ExpectEmpty(t, cq)
}

func testSharedCQOrder(t *testing.T, p nd.Provider) {
	a, b := OpenAdapters(t, p)
	const n = 8
	cq := mustCQ(t, a, 64)
	l := listen(t, b, 0)
	var sides [2]*Side
	var res [2][n]nd.Result
	var outs [2]buffer
	for k := range sides {
		s := &Side{Adapter: a, Connector: mustConnector(t, a), InCQ: cq, OutCQ: cq}
		ep, err := s.Connector.CreateEndpoint(cq, cq, DefaultLimits)
		if err != nil {
			t.Fatalf("CreateEndpoint on a shared queue: %v", err)
		}
		t.Cleanup(func() { ep.Close() })
		s.Endpoint = ep
		connectTo(t, s, b, l, func(ps *Side) {
			in := newBuffer(t, ps, n*cqMsg)
			for i := range n {
				var r nd.Result
				if err := ps.Endpoint.Receive(&r, []nd.SGE{{Buffer: in.b[i*cqMsg : (i+1)*cqMsg], Region: in.mr}}); err != nil {
					t.Fatalf("Receive: %v", err)
				}
			}
		})
		sides[k] = s
		outs[k] = newBuffer(t, s, cqMsg)
	}
	for i := range n {
		for k, s := range sides {
			sendBuf(t, s, outs[k], &res[k][i], 0)
		}
	}
	next := [2]int{}
	for range 2 * n {
		r := Wait(t, cq)
		k := -1
		for kk := range sides {
			if next[kk] < n && r == &res[kk][next[kk]] {
				k = kk
			}
		}
		if k < 0 {
			t.Fatalf("GetResults returned %p, which is not the next Send of either endpoint (next: #%d and #%d)", r, next[0], next[1])
		}
		if r.Status != nd.Success || r.BytesTransferred != cqMsg {
			t.Fatalf("Send completion: %v, %d bytes", r.Status, r.BytesTransferred)
		}
		next[k]++
	}
	ExpectEmpty(t, cq)
}
