package ndtest

import (
	"fmt"
	"testing"
	"time"

	"github.com/godirect/nd"
)

// srqConnections is how many connections the shared receive queue cases
// draw from one queue.
const srqConnections = 12

// srqCases check shared receive queues (nd.SharedReceiveQueue, ND v2's
// IND2SharedReceiveQueue) as package nd documents them. A provider without
// them must say so (ND_NOT_SUPPORTED, MaxSharedReceiveQueueDepth 0); the
// cases are then skipped.
var srqCases = []testCase{
	{"CreateLimits", `docs/semantics.md "creation": depth, SGE and threshold beyond the maxima fail ND_INVALID_PARAMETER_3/_4/_5, a bad completion queue _1; the maxima are accepted`, srqCreateLimits},
	{"CreateEndpointParameters", `docs/semantics.md "creation": an endpoint on a shared queue checks the queue and its outbound limits as CreateEndpoint does; its own Receive is refused`, srqCreateEndpoint},
	{"ReceiveLimits", `docs/semantics.md "posting": a nil Result fails ND_INVALID_PARAMETER_1, too many SGEs ND_DATA_OVERRUN, beyond the depth ND_NO_MORE_ENTRIES`, srqReceiveLimits},
	{"EntryHeldUntilReaped", `docs/semantics.md "posting": a Receive holds its entry of the shared queue until its completion is reaped`, srqEntryHeld},
	{"ManyEndpointsOneCQ", `docs/semantics.md "which Receive, which queue": many endpoints take their Receives from one shared queue, each message whole`, srqManyEndpoints},
	{"CompletesOnConsumersQueue", `docs/semantics.md "which Receive, which queue": a shared queue's Receive completes on the inbound queue of the endpoint that consumed it`, srqConsumersQueue},
	{"EmptyFailsOneEndpoint", `docs/semantics.md "Send on an empty queue": a Send that finds the shared queue empty ends its own connection only`, srqEmptyFailsOne},
	{"OversizedFailsOneEndpoint", `docs/semantics.md "Send larger than the Receive it takes": an oversized message completes its Receive ND_BUFFER_OVERFLOW and ends its own connection only`, srqOversizedFailsOne},
	{"BadEntryFailsOneEndpoint", `docs/semantics.md "Receive outside its registration": a Receive outside its registration completes ND_ACCESS_VIOLATION on the consumer's queue and ends that connection only`, srqBadEntryFailsOne},
	{"LimitEvent", `docs/semantics.md "Notify (ND_SRQ_LIMIT)": the queue dropping below its threshold completes every waiting Notify; below it, Notify returns at once`, srqLimitEvent},
	{"LimitDisabled", `docs/semantics.md "Notify (ND_SRQ_LIMIT)": with a threshold of 0 Notify waits until its context ends`, srqLimitDisabled},
	{"Flush", `docs/semantics.md "Flush of the shared queue": every posted Receive completes ND_CANCELED, 0 bytes, in post order, on the queue's own completion queue`, srqFlush},
	{"Close", `docs/semantics.md "SharedReceiveQueue": Close cancels its Notify and Receives and closes its endpoints (later calls ND_INVALID_HANDLE)`, srqClose},
	{"CloseCQ", `docs/semantics.md "CompletionQueue": closing the shared queue's completion queue cancels its Receives and later calls return ND_INVALID_HANDLE`, srqCloseCQ},
	{"CloseAdapter", `docs/semantics.md "Adapter": closing the adapter cancels its shared queues' Receives and later calls return ND_DEVICE_REMOVED`, srqCloseAdapter},
	{"CloseWhileBusy", `docs/semantics.md "many closes at once": closing the shared queue under traffic completes every accepted Receive exactly once, ND_SUCCESS or ND_CANCELED`, srqCloseWhileBusy},
}

// srqCreateLimits: CreateSharedReceiveQueue reports a limit beyond the
// adapter's by its ND v2 parameter position (ND_INVALID_PARAMETER_3 depth,
// _4 SGE, _5 notify threshold) and a bad completion queue as
// ND_INVALID_PARAMETER_1; every limit at its maximum is accepted.
func srqCreateLimits(t *testing.T, p nd.Provider) {
	a, b := OpenAdapters(t, p)
	cq := mustCQ(t, a, 16)
	ok := nd.SharedReceiveQueueLimits{Entries: 4, SGE: 1, NotifyThreshold: 1}
	mustSRQ(t, a, cq, ok) // skips without shared receive queues
	info := query(t, a)
	closedCQ := mustCQ(t, a, 16)
	closedCQ.Close()
	for _, c := range []struct {
		name   string
		cq     nd.CompletionQueue
		limits nd.SharedReceiveQueueLimits
		want   nd.Status
	}{
		{"nil queue", nil, ok, nd.ErrInvalidParameter1},
		{"closed queue", closedCQ, ok, nd.ErrInvalidParameter1},
		{"queue of another adapter", mustCQ(t, b, 16), ok, nd.ErrInvalidParameter1},
		{"depth 0", cq, nd.SharedReceiveQueueLimits{Entries: 0, SGE: 1}, nd.ErrInvalidParameter3},
		{"depth beyond MaxSharedReceiveQueueDepth", cq, nd.SharedReceiveQueueLimits{Entries: info.MaxSharedReceiveQueueDepth + 1, SGE: 1}, nd.ErrInvalidParameter3},
		{"SGE -1", cq, nd.SharedReceiveQueueLimits{Entries: 4, SGE: -1}, nd.ErrInvalidParameter4},
		{"SGE beyond MaxInboundSGE", cq, nd.SharedReceiveQueueLimits{Entries: 4, SGE: info.MaxInboundSGE + 1}, nd.ErrInvalidParameter4},
		{"threshold -1", cq, nd.SharedReceiveQueueLimits{Entries: 4, SGE: 1, NotifyThreshold: -1}, nd.ErrInvalidParameter5},
		{"threshold beyond depth", cq, nd.SharedReceiveQueueLimits{Entries: 4, SGE: 1, NotifyThreshold: 5}, nd.ErrInvalidParameter5},
	} {
		s, err := nd.CreateSharedReceiveQueue(a, c.cq, c.limits)
		if s != nil {
			s.Close()
		}
		expectStatus(t, "CreateSharedReceiveQueue with "+c.name, err, c.want)
	}
	if info.MaxSharedReceiveQueueDepth <= 1<<16 {
		deepest := nd.SharedReceiveQueueLimits{Entries: info.MaxSharedReceiveQueueDepth, SGE: 1, NotifyThreshold: info.MaxSharedReceiveQueueDepth}
		mustSRQ(t, a, cq, deepest).Close()
	}
	widest := nd.SharedReceiveQueueLimits{Entries: 4, SGE: info.MaxInboundSGE, NotifyThreshold: 4}
	mustSRQ(t, a, cq, widest).Close()
}

// srqCreateEndpoint: CreateEndpointWithSRQ checks its queues (_1, _2), the
// shared queue (_3: nil, closed or of another adapter) and the outbound
// limits as CreateEndpoint does; the inbound ones are the queue's and are
// not checked. The endpoint's own Receive is refused with
// ND_INVALID_DEVICE_REQUEST: its Receives go to the shared queue.
func srqCreateEndpoint(t *testing.T, p nd.Provider) {
	a, b := OpenAdapters(t, p)
	cq := mustCQ(t, a, 64)
	srq := mustSRQ(t, a, cq, nd.SharedReceiveQueueLimits{Entries: 4, SGE: 1})
	other := mustSRQ(t, b, mustCQ(t, b, 16), nd.SharedReceiveQueueLimits{Entries: 4, SGE: 1})
	closed := mustSRQ(t, a, cq, nd.SharedReceiveQueueLimits{Entries: 4, SGE: 1})
	closed.Close()
	zeroIn := PeerLimits
	zeroIn.InboundEntries, zeroIn.InboundSGE = 0, 0
	noOut := PeerLimits
	noOut.OutboundEntries = 0
	conn := mustConnector(t, a)
	for _, c := range []struct {
		name        string
		in, out     nd.CompletionQueue
		srq         nd.SharedReceiveQueue
		limits      nd.EndpointLimits
		want        nd.Status
		inboundUsed bool
	}{
		{"nil inbound queue", nil, cq, srq, PeerLimits, nd.ErrInvalidParameter1, false},
		{"nil outbound queue", cq, nil, srq, PeerLimits, nd.ErrInvalidParameter2, false},
		{"nil shared queue", cq, cq, nil, PeerLimits, nd.ErrInvalidParameter3, false},
		{"shared queue of another adapter", cq, cq, other, PeerLimits, nd.ErrInvalidParameter3, false},
		{"closed shared queue", cq, cq, closed, PeerLimits, nd.ErrInvalidParameter3, false},
		{"OutboundEntries 0", cq, cq, srq, noOut, nd.ErrInvalidParameter4, false},
		{"inbound limits 0 (not used)", cq, cq, srq, zeroIn, nd.Success, true},
	} {
		ep, err := nd.CreateEndpointWithSRQ(conn, c.in, c.out, c.srq, c.limits)
		expectStatus(t, "CreateEndpointWithSRQ with "+c.name, err, c.want)
		if err != nil {
			continue
		}
		buf := make([]byte, 8)
		sgl := []nd.SGE{{Buffer: buf, Region: registerOn(t, a, buf)}}
		expectStatus(t, "the endpoint's own Receive", ep.Receive(new(nd.Result), sgl), nd.ErrInvalidDeviceRequest)
		ep.Close()
	}
}

// srqReceiveLimits: the shared queue's Receive refuses, queuing nothing, a
// nil Result (ND_INVALID_PARAMETER_1), more SGEs than the queue's limit
// (ND_DATA_OVERRUN) and a Receive beyond the depth (ND_NO_MORE_ENTRIES).
func srqReceiveLimits(t *testing.T, p nd.Provider) {
	a, _ := OpenAdapters(t, p)
	cq := mustCQ(t, a, 16)
	srq := mustSRQ(t, a, cq, nd.SharedReceiveQueueLimits{Entries: 3, SGE: 2})
	buf := make([]byte, 64)
	mr := registerOn(t, a, buf)
	sgl := []nd.SGE{{Buffer: buf[:16], Region: mr}, {Buffer: buf[16:32], Region: mr}, {Buffer: buf[32:48], Region: mr}}
	expectStatus(t, "Receive with a nil Result", srq.Receive(nil, sgl[:1]), nd.ErrInvalidParameter1)
	expectStatus(t, "Receive with 3 SGEs on a queue of 2", srq.Receive(new(nd.Result), sgl), nd.ErrDataOverrun)
	var rs [4]nd.Result
	for k := range 3 {
		mustPost(t, fmt.Sprintf("Receive %d of 3", k), srq.Receive(&rs[k], sgl[:2]))
	}
	expectStatus(t, "Receive beyond the depth", srq.Receive(&rs[3], sgl[:1]), nd.ErrNoMoreEntries)
	// The refused calls queued nothing: a flush completes the three.
	mustPost(t, "Flush", srq.Flush())
	for k := range 3 {
		Expect(t, cq, &rs[k], nd.ErrCanceled, 0)
	}
	ExpectEmpty(t, cq)
}

// srqEntryHeld: a Receive occupies its entry of the shared queue until its
// completion is reaped, on whatever queue it completed, as on hardware.
func srqEntryHeld(t *testing.T, p nd.Provider) {
	ps := newSRQPeers(t, p, 1, 32, nd.SharedReceiveQueueLimits{Entries: 2, SGE: 1}, false)
	ps.post(t, 0)
	ps.post(t, 1)
	expectStatus(t, "a third Receive on a queue of 2", ps.srq.Receive(new(nd.Result), nil), nd.ErrNoMoreEntries)
	var send nd.Result
	ps.send(t, 0, &send)
	Expect(t, ps.activeCQ, &send, nd.Success, 32)
	// Notify(ANY) returns once the Receive's completion is queued, and
	// takes nothing: the Receive completed and is not reaped, so its entry
	// is still taken.
	if err := ps.passiveCQ.Notify(ctx(t), nd.NotifyAny); err != nil {
		t.Fatalf("Notify(ANY) for the Receive's completion: %v", err)
	}
	expectStatus(t, "a Receive while the completed one is not reaped", ps.srq.Receive(new(nd.Result), nil), nd.ErrNoMoreEntries)
	Expect(t, ps.passiveCQ, &ps.recvs[0], nd.Success, 32)
	ps.checkMessage(t, 0, 0, 0)
	ps.post(t, 0)
}

// srqManyEndpoints: many endpoints on one shared queue and one completion
// queue; rounds of interleaved messages, several in flight per connection,
// the queue holding exactly the Receives a round needs. Each message lands
// whole in one Receive, each Receive completes once with its bytes, and per
// endpoint the Receives complete in message order (and the Sends in post
// order).
func srqManyEndpoints(t *testing.T, p nd.Provider) {
	const (
		n     = srqConnections
		depth = 3 // messages in flight per connection (PeerLimits allow 4)
		size  = 64
	)
	ps := newSRQPeers(t, p, n, size*depth, nd.SharedReceiveQueueLimits{Entries: n * depth, SGE: 1}, false)
	ps.size = size // each message uses one size-byte part of the active buffer
	ps.recvBuf = ps.recvBuf[:n*depth*size]
	sends := make([][depth]nd.Result, n)
	sendOf := map[*nd.Result][2]int{}
	for i := range n {
		for k := range depth {
			sendOf[&sends[i][k]] = [2]int{i, k}
		}
	}
	nextSend, nextRecv := make([]int, n), make([]int, n)
	for round := range 4 {
		for k := range n * depth {
			ps.post(t, k)
		}
		for k := range depth {
			for j := range n {
				i := (j*5 + round*7 + k) % n
				a := ps.active[i]
				seq := nextRecv[i] + k
				msg := a.Buf[k*size : (k+1)*size]
				fillPattern(msg, byte(i*37+seq))
				msg[0], msg[1] = byte(i), byte(seq)
				mustPost(t, "Send", a.Endpoint.Send(&sends[i][k], []nd.SGE{{Buffer: msg, Region: a.SGL[0].Region}}, 0))
			}
		}
		deadline := time.Now().Add(Timeout)
		for got := 0; got < 2*n*depth; {
			if time.Now().After(deadline) {
				t.Fatalf("round %d: %d of %d completions within %v", round, got, 2*n*depth, Timeout)
			}
			for _, cq := range []nd.CompletionQueue{ps.activeCQ, ps.passiveCQ} {
				m := cq.GetResults(ps.out)
				for _, r := range ps.out[:m] {
					if r.Status != nd.Success || r.BytesTransferred != size {
						t.Fatalf("round %d: completion %p: %v, %d bytes; want Success, %d", round, r, r.Status, r.BytesTransferred, size)
					}
					if s, ok := sendOf[r]; ok {
						if cq != ps.activeCQ {
							t.Fatalf("round %d: a Send completed on the passive queue", round)
						}
						if s[1] != nextSend[s[0]]%depth {
							t.Fatalf("round %d: connection %d completed Send %d before %d (post order)", round, s[0], s[1], nextSend[s[0]]%depth)
						}
						nextSend[s[0]]++
						continue
					}
					k, ok := ps.slotOf[r]
					if !ok || cq != ps.passiveCQ {
						t.Fatalf("round %d: a completion %p that is no Receive of the shared queue", round, r)
					}
					i, seq := int(ps.slot(k)[0]), int(ps.slot(k)[1])
					if i >= n || seq != nextRecv[i]%256 {
						t.Fatalf("round %d: Receive %d holds message %d of connection %d, want message %d (per-endpoint order)", round, k, seq, i, nextRecv[i%n])
					}
					ps.checkMessage(t, k, i, nextRecv[i])
					nextRecv[i]++
				}
				got += m
			}
		}
	}
	ExpectEmpty(t, ps.activeCQ)
	ExpectEmpty(t, ps.passiveCQ)
}

// srqConsumersQueue: a Receive that an endpoint took completes on that
// endpoint's inbound queue, not on the shared queue's own, which sees only
// the Receives nobody took (Flush).
func srqConsumersQueue(t *testing.T, p nd.Provider) {
	ps := newSRQPeers(t, p, 2, 32, nd.SharedReceiveQueueLimits{Entries: 4, SGE: 1}, true)
	for k := range 3 {
		ps.post(t, k)
	}
	var send [2]nd.Result
	ps.send(t, 1, &send[1])
	Expect(t, ps.activeCQ, &send[1], nd.Success, 32)
	Expect(t, ps.passiveCQ, &ps.recvs[0], nd.Success, 32)
	ps.checkMessage(t, 0, 1, 0)
	ps.send(t, 0, &send[0])
	Expect(t, ps.activeCQ, &send[0], nd.Success, 32)
	Expect(t, ps.passiveCQ, &ps.recvs[1], nd.Success, 32)
	ps.checkMessage(t, 1, 0, 0)
	ExpectEmpty(t, ps.srqCQ)
	mustPost(t, "Flush", ps.srq.Flush())
	Expect(t, ps.srqCQ, &ps.recvs[2], nd.ErrCanceled, 0)
	ExpectEmpty(t, ps.passiveCQ)
}

// srqEmptyFailsOne: a Send that finds the shared queue empty ends that
// message's connection, as a Send with no Receive posted does (the
// sender's Send completes ND_SUCCESS or ND_REMOTE_ERROR, NotifyDisconnect
// returns, later requests of the endpoint complete ND_CANCELED), and
// consumes nothing; every other endpoint on the queue keeps receiving,
// with its bytes, before and after.
func srqEmptyFailsOne(t *testing.T, p nd.Provider) {
	const n, bad, size = 6, 4, 48
	ps := newSRQPeers(t, p, n, size, nd.SharedReceiveQueueLimits{Entries: 8, SGE: 1}, false)
	var sends [n]nd.Result
	// One message over each good connection takes the Receives posted.
	for k := range n - 1 {
		ps.post(t, k)
	}
	good := []int{0, 1, 2, 3, 5}
	for _, i := range good {
		ps.send(t, i, &sends[i])
	}
	ps.expectRound(t, good, sends[:])
	// The queue is empty: the bad connection's message fails it.
	ps.send(t, bad, &sends[bad])
	expectSenderStatus(t, &Side{OutCQ: ps.activeCQ}, &sends[bad])
	AwaitDisconnect(t, ps.passive[bad].Connector, "a Send on an empty shared receive queue")
	AwaitDisconnect(t, ps.active[bad].Connector, "a Send on an empty shared receive queue (the sender's side)")
	var late nd.Result
	mustPost(t, "Send on the failed endpoint", ps.passive[bad].Endpoint.Send(&late, ps.passive[bad].SGL, 0))
	Expect(t, ps.passiveCQ, &late, nd.ErrCanceled, -1)
	ExpectEmpty(t, ps.passiveCQ)
	// The others go on, and the failed connection took none of the
	// Receives posted after it failed.
	ps.othersGoOn(t, good, sends[:], n-1, true)
}

// othersGoOn checks that the connections good, the others than one that
// failed, keep their traffic: three rounds of a message over each, after
// posting `receives` shared Receives (before the first round too when
// postFirst; else the Receives for the first are posted already), and
// nothing else completes.
func (ps *srqPeers) othersGoOn(t testing.TB, good []int, sends []nd.Result, receives int, postFirst bool) {
	t.Helper()
	for round := range 3 {
		if round > 0 || postFirst {
			for k := range receives {
				ps.post(t, k)
			}
		}
		for _, i := range good {
			ps.send(t, i, &sends[i])
		}
		ps.expectRound(t, good, sends)
	}
	ExpectEmpty(t, ps.passiveCQ)
}

// expectRound reaps one Send per connection of conns from the active queue
// and one Receive per connection from the passive queue, each Success with
// its bytes: the Receives posted in slots 0..len(conns)-1, filled in any
// order between connections with each connection's latest message.
func (ps *srqPeers) expectRound(t testing.TB, conns []int, sends []nd.Result) {
	t.Helper()
	want := map[*nd.Result]bool{}
	for _, i := range conns {
		want[&sends[i]] = true
	}
	for k := range conns {
		want[&ps.recvs[k]] = true
	}
	deadline := time.Now().Add(Timeout)
	seen := map[int]bool{}
	for len(want) > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("%d completions missing within %v", len(want), Timeout)
		}
		for _, cq := range []nd.CompletionQueue{ps.activeCQ, ps.passiveCQ} {
			m := cq.GetResults(ps.out)
			for _, r := range ps.out[:m] {
				if !want[r] {
					t.Fatalf("an unexpected completion %p (%v)", r, r.Status)
				}
				delete(want, r)
				if r.Status != nd.Success || r.BytesTransferred != ps.size {
					t.Fatalf("completion %p: %v, %d bytes; want Success, %d", r, r.Status, r.BytesTransferred, ps.size)
				}
				if k, ok := ps.slotOf[r]; ok {
					i := int(ps.slot(k)[0])
					if seen[i] {
						t.Fatalf("connection %d filled two Receives in one round", i)
					}
					seen[i] = true
					ps.checkMessage(t, k, i, ps.sent[i]-1)
				}
			}
		}
	}
}

// srqOversizedFailsOne: a Send larger than the shared Receive it takes
// completes that Receive with ND_BUFFER_OVERFLOW on the endpoint's queue
// and ends that connection only; the Receives behind it stay in the shared
// queue for the other endpoints.
func srqOversizedFailsOne(t *testing.T, p nd.Provider) {
	const n, bad, size = 4, 2, 48
	ps := newSRQPeers(t, p, n, size, nd.SharedReceiveQueueLimits{Entries: 8, SGE: 1}, false)
	var short nd.Result
	mustPost(t, "a short shared Receive", ps.srq.Receive(&short, []nd.SGE{{Buffer: ps.recvBuf[len(ps.recvBuf)-8:], Region: ps.recvMR}}))
	for k := range n - 1 {
		ps.post(t, k)
	}
	var sends [n]nd.Result
	ps.send(t, bad, &sends[bad])
	expectSenderStatus(t, &Side{OutCQ: ps.activeCQ}, &sends[bad])
	Expect(t, ps.passiveCQ, &short, nd.ErrBufferOverflow, 0)
	AwaitDisconnect(t, ps.passive[bad].Connector, "a Send larger than its shared Receive")
	good := []int{0, 1, 3}
	ps.othersGoOn(t, good, sends[:], n-1, false)
}

// srqBadEntryFailsOne: a shared Receive whose scatter/gather entry lies
// outside its registration is accepted; the Send that takes it completes
// it with ND_ACCESS_VIOLATION on that endpoint's queue and ends that
// connection only.
func srqBadEntryFailsOne(t *testing.T, p nd.Provider) {
	const n, bad, size = 3, 1, 48
	ps := newSRQPeers(t, p, n, size, nd.SharedReceiveQueueLimits{Entries: 8, SGE: 1}, false)
	var wild nd.Result
	outside := make([]byte, size) // not inside ps.recvMR's buffer
	mustPost(t, "a shared Receive outside its registration", ps.srq.Receive(&wild, []nd.SGE{{Buffer: outside, Region: ps.recvMR}}))
	var sends [n]nd.Result
	ps.send(t, bad, &sends[bad])
	expectSenderStatus(t, &Side{OutCQ: ps.activeCQ}, &sends[bad])
	expectAccessViolation(t, ps.passiveCQ, &wild, nd.CauseLocalAccess)
	AwaitDisconnect(t, ps.passive[bad].Connector, "a Send into a shared Receive outside its registration")
	for k := range n - 1 {
		ps.post(t, k)
	}
	good := []int{0, 2}
	for _, i := range good {
		ps.send(t, i, &sends[i])
	}
	ps.expectRound(t, good, sends[:])
	ExpectEmpty(t, ps.passiveCQ)
}

// srqLimitEvent: Notify (ND_SRQ_LIMIT) returns when the Receives waiting in
// the queue drop below the threshold, and not before; one drop completes
// every Notify waiting; called while they are below, it returns at once;
// after Receives are posted again above it, it waits again, and ends with
// ND_CANCELED when its context does; a Flush that empties the queue fires
// it too.
func srqLimitEvent(t *testing.T, p nd.Provider) {
	ps := newSRQPeers(t, p, 2, 32, nd.SharedReceiveQueueLimits{Entries: 8, SGE: 1, NotifyThreshold: 2}, false)
	for k := range 3 {
		ps.post(t, k)
	}
	c, cancel := cancelableCtx(t)
	defer cancel()
	w1 := start("Notify 1", func() error { return ps.srq.Notify(c) })
	w2 := start("Notify 2", func() error { return ps.srq.Notify(c) })
	w1.parked(t)
	w2.parked(t)
	var send nd.Result
	ps.send(t, 0, &send)
	Expect(t, ps.activeCQ, &send, nd.Success, 32)
	Expect(t, ps.passiveCQ, &ps.recvs[0], nd.Success, 32)
	w1.notReturned(t, "2 Receives wait in the queue, not fewer than the threshold 2")
	w2.notReturned(t, "2 Receives wait in the queue, not fewer than the threshold 2")
	ps.send(t, 1, &send)
	Expect(t, ps.activeCQ, &send, nd.Success, 32)
	Expect(t, ps.passiveCQ, &ps.recvs[1], nd.Success, 32)
	expectStatus(t, "Notify 1 after the queue dropped below its threshold", w1.wait(t), nd.Success)
	expectStatus(t, "Notify 2 after the queue dropped below its threshold", w2.wait(t), nd.Success)
	expectStatus(t, "Notify while below the threshold", ps.srq.Notify(ctx(t)), nd.Success)
	ps.post(t, 0)
	ps.post(t, 1)
	c2, cancel2 := cancelableCtx(t)
	w3 := start("Notify 3", func() error { return ps.srq.Notify(c2) })
	w3.parked(t)
	cancel2()
	expectCanceled(t, "Notify whose context ended", w3.wait(t))
	// A Flush takes the queue below the threshold too.
	w4 := start("Notify 4", func() error { return ps.srq.Notify(c) })
	w4.parked(t)
	mustPost(t, "Flush", ps.srq.Flush())
	expectStatus(t, "Notify after a Flush emptied the queue", w4.wait(t), nd.Success)
	for _, k := range []int{2, 0, 1} {
		Expect(t, ps.passiveCQ, &ps.recvs[k], nd.ErrCanceled, 0)
	}
}

// srqLimitDisabled: with a threshold of 0 the limit event never fires, even
// with the queue empty; Notify waits until its context ends.
func srqLimitDisabled(t *testing.T, p nd.Provider) {
	ps := newSRQPeers(t, p, 1, 32, nd.SharedReceiveQueueLimits{Entries: 4, SGE: 1}, false)
	c, cancel := cancelableCtx(t)
	w := start("Notify", func() error { return ps.srq.Notify(c) })
	w.parked(t)
	ps.post(t, 0)
	var send nd.Result
	ps.send(t, 0, &send)
	Expect(t, ps.passiveCQ, &ps.recvs[0], nd.Success, 32)
	w.notReturned(t, "the threshold is 0")
	cancel()
	expectCanceled(t, "Notify whose context ended", w.wait(t))
}

// srqFlush: Flush completes the Receives waiting in the queue with
// ND_CANCELED, 0 bytes, in post order, on the queue's own completion
// queue; the queue stays usable, and a Flush of an empty queue completes
// nothing.
func srqFlush(t *testing.T, p nd.Provider) {
	ps := newSRQPeers(t, p, 1, 32, nd.SharedReceiveQueueLimits{Entries: 4, SGE: 1}, true)
	for k := range 4 {
		ps.post(t, k)
	}
	mustPost(t, "Flush", ps.srq.Flush())
	for k := range 4 {
		Expect(t, ps.srqCQ, &ps.recvs[k], nd.ErrCanceled, 0)
	}
	ExpectEmpty(t, ps.srqCQ)
	ExpectEmpty(t, ps.passiveCQ)
	mustPost(t, "Flush of an empty queue", ps.srq.Flush())
	ExpectEmpty(t, ps.srqCQ)
	ps.post(t, 2)
	var send nd.Result
	ps.send(t, 0, &send)
	Expect(t, ps.activeCQ, &send, nd.Success, 32)
	Expect(t, ps.passiveCQ, &ps.recvs[2], nd.Success, 32)
	ps.checkMessage(t, 2, 0, 0)
}

// srqClose: closing the shared queue ends a waiting Notify with
// ND_CANCELED, completes the Receives waiting in it with ND_CANCELED on its
// own completion queue, and closes every endpoint on it (their later calls:
// ND_INVALID_HANDLE; their peers see the connection end); later calls on
// it return ND_INVALID_HANDLE, a second Close nil, and naming it in
// CreateEndpointWithSRQ is ND_INVALID_PARAMETER_3.
func srqClose(t *testing.T, p nd.Provider) {
	ps := newSRQPeers(t, p, 2, 32, nd.SharedReceiveQueueLimits{Entries: 4, SGE: 1, NotifyThreshold: 1}, true)
	for k := range 3 {
		ps.post(t, k)
	}
	var send nd.Result
	ps.send(t, 0, &send)
	Expect(t, ps.passiveCQ, &ps.recvs[0], nd.Success, 32)
	c, cancel := cancelableCtx(t)
	defer cancel()
	w := start("Notify", func() error { return ps.srq.Notify(c) })
	w.parked(t)
	if err := ps.srq.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	expectCanceled(t, "Notify waiting when the queue closed", w.wait(t))
	Expect(t, ps.srqCQ, &ps.recvs[1], nd.ErrCanceled, 0)
	Expect(t, ps.srqCQ, &ps.recvs[2], nd.ErrCanceled, 0)
	expectStatus(t, "Receive after Close", ps.srq.Receive(new(nd.Result), nil), nd.ErrInvalidHandle)
	expectStatus(t, "Flush after Close", ps.srq.Flush(), nd.ErrInvalidHandle)
	expectStatus(t, "Notify after Close", ps.srq.Notify(ctx(t)), nd.ErrInvalidHandle)
	expectStatus(t, "a second Close", ps.srq.Close(), nd.Success)
	for i, e := range ps.passive {
		expectStatus(t, fmt.Sprintf("Send on endpoint %d of the closed queue", i), e.Endpoint.Send(new(nd.Result), nil, 0), nd.ErrInvalidHandle)
		AwaitDisconnect(t, ps.active[i].Connector, "closing the peer's shared receive queue")
	}
	_, err := nd.CreateEndpointWithSRQ(mustConnector(t, ps.b), ps.passiveCQ, ps.passiveCQ, ps.srq, PeerLimits)
	expectStatus(t, "CreateEndpointWithSRQ naming the closed queue", err, nd.ErrInvalidParameter3)
}

// srqCloseCQ: closing the shared queue's completion queue closes the
// shared queue: its waiting Receives complete ND_CANCELED into that
// completion queue, which still hands them back, and later calls on the
// shared queue and its endpoints return ND_INVALID_HANDLE.
func srqCloseCQ(t *testing.T, p nd.Provider) {
	ps := newSRQPeers(t, p, 1, 32, nd.SharedReceiveQueueLimits{Entries: 4, SGE: 1}, true)
	ps.post(t, 0)
	ps.post(t, 1)
	ps.srqCQ.Close()
	Expect(t, ps.srqCQ, &ps.recvs[0], nd.ErrCanceled, 0)
	Expect(t, ps.srqCQ, &ps.recvs[1], nd.ErrCanceled, 0)
	expectStatus(t, "Receive after its completion queue closed", ps.srq.Receive(new(nd.Result), nil), nd.ErrInvalidHandle)
	expectStatus(t, "Send on an endpoint of the closed shared queue", ps.passive[0].Endpoint.Send(new(nd.Result), nil, 0), nd.ErrInvalidHandle)
	expectStatus(t, "Close", ps.srq.Close(), nd.Success)
}

// srqCloseAdapter: closing the adapter closes its shared queues: waiting
// Receives complete ND_CANCELED (GetResults still returns them), later
// calls return ND_DEVICE_REMOVED, Close nil.
func srqCloseAdapter(t *testing.T, p nd.Provider) {
	ps := newSRQPeers(t, p, 1, 32, nd.SharedReceiveQueueLimits{Entries: 4, SGE: 1}, true)
	ps.post(t, 0)
	ps.b.Close()
	Expect(t, ps.srqCQ, &ps.recvs[0], nd.ErrCanceled, 0)
	expectStatus(t, "Receive after the adapter closed", ps.srq.Receive(new(nd.Result), nil), nd.ErrDeviceRemoved)
	expectStatus(t, "Flush after the adapter closed", ps.srq.Flush(), nd.ErrDeviceRemoved)
	expectStatus(t, "Notify after the adapter closed", ps.srq.Notify(ctx(t)), nd.ErrDeviceRemoved)
	expectStatus(t, "Close after the adapter closed", ps.srq.Close(), nd.Success)
}
