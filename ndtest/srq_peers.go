package ndtest

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/godirect/nd"
)

// srqPeers is n connections between two adapters whose passive endpoints
// all take their Receives from one shared receive queue and complete on
// one completion queue; the active endpoints share a queue of their own.
// Every message the suite sends over it names its connection and its
// sequence number in its first two bytes, as the headers of MPI's messages
// name their sender, since a Receive completion does not name its endpoint.
type srqPeers struct {
	n, size   int
	ctx       context.Context
	a, b      nd.Adapter
	activeCQ  nd.CompletionQueue
	passiveCQ nd.CompletionQueue // inbound and outbound queue of every passive endpoint
	srqCQ     nd.CompletionQueue // the shared queue's own (passiveCQ unless asked otherwise)
	srq       nd.SharedReceiveQueue
	limits    nd.SharedReceiveQueueLimits

	active, passive []*PeerEnd

	// The shared queue's Receives: recvs[k] receives into recvBuf slot k.
	recvBuf []byte
	recvMR  nd.MemoryRegion
	recvs   []nd.Result
	slotOf  map[*nd.Result]int
	sent    []int // messages sent per connection
	out     []*nd.Result
}

// newSRQPeers connects n pairs of provider p with size-byte messages, the
// passive endpoints on a shared receive queue of limits on adapter b; with
// separateCQ its own completion queue is not the passive endpoints'. It
// skips the test when the provider has no shared receive queues, after
// checking that it says so with ND_NOT_SUPPORTED. No Receive is posted.
func newSRQPeers(t testing.TB, p nd.Provider, n, size int, limits nd.SharedReceiveQueueLimits, separateCQ bool) *srqPeers {
	t.Helper()
	a, b := OpenAdapters(t, p)
	c, cancel := context.WithTimeout(context.Background(), Timeout+time.Duration(n)*10*time.Millisecond)
	t.Cleanup(cancel)
	cqSize := 4*n*PeerLimits.OutboundEntries + 2*limits.Entries + 16
	ps := &srqPeers{
		n: n, size: size, ctx: c, a: a, b: b, limits: limits,
		activeCQ: mustCQ(t, a, cqSize), passiveCQ: mustCQ(t, b, cqSize),
		slotOf: map[*nd.Result]int{}, sent: make([]int, n), out: make([]*nd.Result, 16),
	}
	ps.srqCQ = ps.passiveCQ
	if separateCQ {
		ps.srqCQ = mustCQ(t, b, cqSize)
	}
	ps.srq = mustSRQ(t, b, ps.srqCQ, limits)
	ps.recvBuf = make([]byte, limits.Entries*size)
	ps.recvMR = registerOn(t, b, ps.recvBuf)
	ps.recvs = make([]nd.Result, limits.Entries)
	for k := range ps.recvs {
		ps.slotOf[&ps.recvs[k]] = k
	}
	l := listen(t, b, 0)
	remote := addrOf(b, l)
	for i := range n {
		act := newPeerEnd(t, a, mustConnector(t, a), ps.activeCQ, size, nil)
		connected := start("Connect", func() error {
			err := act.Connector.Connect(c, act.Endpoint, remote, Protocol, 0, nil)
			if err == nil {
				err = act.Connector.CompleteConnect(c)
			}
			return err
		})
		pc := mustConnector(t, b)
		if err := l.GetConnectionRequest(c, pc); err != nil {
			t.Fatalf("connection %d: GetConnectionRequest: %v", i, err)
		}
		pas := newPeerEnd(t, b, pc, ps.passiveCQ, size, ps.srq)
		if err := pc.Accept(c, pas.Endpoint, nil); err != nil {
			t.Fatalf("connection %d: Accept: %v", i, err)
		}
		if err := connected.wait(t); err != nil {
			t.Fatalf("connection %d: Connect: %v", i, err)
		}
		ps.active, ps.passive = append(ps.active, act), append(ps.passive, pas)
	}
	return ps
}

// mustSRQ creates a shared receive queue on a, or skips the test when a
// has none and says so exactly as ND does (ND_NOT_SUPPORTED, and a
// MaxSharedReceiveQueueDepth of 0 in Query).
func mustSRQ(t testing.TB, a nd.Adapter, cq nd.CompletionQueue, limits nd.SharedReceiveQueueLimits) nd.SharedReceiveQueue {
	t.Helper()
	s, err := nd.CreateSharedReceiveQueue(a, cq, limits)
	if errors.Is(err, nd.ErrNotSupported) {
		if depth := query(t, a).MaxSharedReceiveQueueDepth; depth != 0 {
			t.Fatalf("CreateSharedReceiveQueue: ND_NOT_SUPPORTED, but Query reports MaxSharedReceiveQueueDepth %d", depth)
		}
		t.Skip("the provider has no shared receive queues (ND_NOT_SUPPORTED)")
	}
	if err != nil {
		t.Fatalf("CreateSharedReceiveQueue(%+v): %v", limits, err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func registerOn(t testing.TB, a nd.Adapter, buf []byte) nd.MemoryRegion {
	t.Helper()
	mr, err := a.RegisterMemory(ctx(t), buf)
	if err != nil {
		t.Fatalf("RegisterMemory(%d bytes): %v", len(buf), err)
	}
	t.Cleanup(func() { a.DeregisterMemory(context.Background(), mr) })
	return mr
}

// newPeerEnd creates an endpoint on conn with both directions on cq, on
// srq when it is not nil, and a registered buffer of size bytes.
func newPeerEnd(t testing.TB, a nd.Adapter, conn nd.Connector, cq nd.CompletionQueue, size int, srq nd.SharedReceiveQueue) *PeerEnd {
	t.Helper()
	var ep nd.Endpoint
	var err error
	if srq != nil {
		ep, err = nd.CreateEndpointWithSRQ(conn, cq, cq, srq, PeerLimits)
	} else {
		ep, err = conn.CreateEndpoint(cq, cq, PeerLimits)
	}
	if err != nil {
		t.Fatalf("CreateEndpoint (shared receive queue %v): %v", srq != nil, err)
	}
	t.Cleanup(func() { ep.Close() })
	e := &PeerEnd{Endpoint: ep, Connector: conn, CQ: cq, Buf: make([]byte, size)}
	e.SGL = []nd.SGE{{Buffer: e.Buf, Region: registerOn(t, a, e.Buf)}}
	return e
}

// slot is the part of the shared queue's buffer that Receive k fills.
func (ps *srqPeers) slot(k int) []byte { return ps.recvBuf[k*ps.size : (k+1)*ps.size] }

// post posts Receive k to the shared queue, its slot cleared first.
func (ps *srqPeers) post(t testing.TB, k int) {
	t.Helper()
	clear(ps.slot(k))
	mustPost(t, fmt.Sprintf("shared Receive %d", k), ps.srq.Receive(&ps.recvs[k], []nd.SGE{{Buffer: ps.slot(k), Region: ps.recvMR}}))
}

// message fills the active buffer of connection i with its next message:
// the connection, the sequence number, then a pattern of both.
func (ps *srqPeers) message(i int) []byte {
	msg := ps.active[i].Buf
	seq := ps.sent[i]
	ps.sent[i]++
	fillPattern(msg, byte(i*37+seq))
	msg[0], msg[1] = byte(i), byte(seq)
	return msg
}

// send sends connection i's next message.
func (ps *srqPeers) send(t testing.TB, i int, res *nd.Result) {
	t.Helper()
	ps.message(i)
	mustPost(t, fmt.Sprintf("connection %d: Send", i), ps.active[i].Endpoint.Send(res, ps.active[i].SGL, 0))
}

// checkMessage checks that Receive k holds message seq of connection i.
func (ps *srqPeers) checkMessage(t testing.TB, k, i, seq int) {
	t.Helper()
	want := make([]byte, ps.size)
	fillPattern(want, byte(i*37+seq))
	want[0], want[1] = byte(i), byte(seq)
	checkBytes(t, fmt.Sprintf("connection %d message %d (Receive %d)", i, seq, k), ps.slot(k), want)
}
