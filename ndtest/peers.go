package ndtest

import (
	"context"
	"fmt"
	"net/netip"
	"runtime"
	"testing"
	"time"

	"github.com/godirect/nd"
)

// Peers is n connected endpoint pairs between two adapters, shaped as ND's
// users shape them: every endpoint of a side attached to that side's one
// completion queue (Shared), or, for comparison, each endpoint with a queue
// of its own. Every endpoint has one registered buffer of Size bytes; the
// passive side keeps a Receive posted on each endpoint.
type Peers struct {
	N      int
	Size   int
	Shared bool
	// ActiveCQ and PassiveCQ are the shared queues (nil unless Shared);
	// Active[i] and Passive[i] are the ends of connection i.
	ActiveCQ, PassiveCQ nd.CompletionQueue
	Active, Passive     []*PeerEnd

	out []*nd.Result
	ctx context.Context

	// With SRQ set (NewPeersSRQ), the passive endpoints take their
	// Receives from it: srqRecvs[k] receives into srqSGLs[k].
	SRQ      nd.SharedReceiveQueue
	srqRecvs []nd.Result
	srqSGLs  [][]nd.SGE
}

// PeerEnd is one endpoint of Peers with its queue, buffer and reusable
// Results.
type PeerEnd struct {
	Endpoint   nd.Endpoint
	Connector  nd.Connector
	CQ         nd.CompletionQueue // both directions
	Buf        []byte
	SGL        []nd.SGE
	Send, Recv nd.Result
}

// PeerLimits are the endpoint limits of Peers: a few requests each way.
var PeerLimits = nd.EndpointLimits{
	InboundEntries: 4, OutboundEntries: 4,
	InboundSGE: 1, OutboundSGE: 1,
	InboundReadLimit: 1, OutboundReadLimit: 1,
}

// NewPeers connects n pairs of provider p with size-byte buffers, each
// endpoint's queue large enough for every completion a round makes. Setup
// failures fail tb.
func NewPeers(tb testing.TB, p nd.Provider, n, size int, shared bool) *Peers {
	tb.Helper()
	return newPeers(tb, p, n, size, shared, 0)
}

// NewPeersSRQ is NewPeers with both sides' endpoints on shared queues and
// the passive endpoints taking their Receives from one shared receive
// queue of entries Receives of size bytes (skipping tb when the provider
// has none), as MPI implementations shape many connections. Round then
// sends at most entries messages at a time, reposting the Receives
// between, so that the queue never runs empty.
func NewPeersSRQ(tb testing.TB, p nd.Provider, n, size, entries int) *Peers {
	tb.Helper()
	return newPeers(tb, p, n, size, true, entries)
}

// ReceiveBufferBytes is the bytes of Receive buffers the passive side
// keeps posted: one buffer per endpoint, or one per entry of the shared
// receive queue.
func (ps *Peers) ReceiveBufferBytes() int {
	if ps.SRQ != nil {
		return len(ps.srqRecvs) * ps.Size
	}
	return ps.N * ps.Size
}

func newPeers(tb testing.TB, p nd.Provider, n, size int, shared bool, srqEntries int) *Peers {
	tb.Helper()
	a, b := OpenAdapters(tb, p)
	c, cancel := context.WithTimeout(context.Background(), Timeout+time.Duration(n)*10*time.Millisecond)
	tb.Cleanup(cancel)
	ps := &Peers{N: n, Size: size, Shared: shared, out: make([]*nd.Result, 64), ctx: c}
	cqSize := 2*n*PeerLimits.InboundEntries + 16
	if shared {
		ps.ActiveCQ, ps.PassiveCQ = mustCQ(tb, a, cqSize), mustCQ(tb, b, cqSize)
	}
	if srqEntries > 0 {
		ps.SRQ = mustSRQ(tb, b, ps.PassiveCQ, nd.SharedReceiveQueueLimits{Entries: srqEntries, SGE: 1})
		buf := make([]byte, srqEntries*size)
		mr := registerOn(tb, b, buf)
		ps.srqRecvs = make([]nd.Result, srqEntries)
		ps.srqSGLs = make([][]nd.SGE, srqEntries)
		for k := range ps.srqSGLs {
			ps.srqSGLs[k] = []nd.SGE{{Buffer: buf[k*size : (k+1)*size], Region: mr}}
		}
	}
	l, err := b.Listen(0, Protocol, 0)
	if err != nil {
		tb.Fatalf("Listen: %v", err)
	}
	tb.Cleanup(func() { l.Close() })
	remote := netip.AddrPortFrom(b.Address(), l.Port())
	for i := range n {
		act := ps.newEnd(tb, a, ps.ActiveCQ)
		connected := make(chan error, 1)
		go func() {
			err := act.Connector.Connect(c, act.Endpoint, remote, Protocol, 0, nil)
			if err == nil {
				err = act.Connector.CompleteConnect(c)
			}
			connected <- err
		}()
		pc := mustConnector(tb, b)
		if err := l.GetConnectionRequest(c, pc); err != nil {
			tb.Fatalf("connection %d: GetConnectionRequest: %v", i, err)
		}
		pas := ps.newEndOn(tb, b, pc, ps.PassiveCQ)
		if ps.SRQ == nil {
			ps.postRecv(tb, pas)
		}
		if err := pc.Accept(c, pas.Endpoint, nil); err != nil {
			tb.Fatalf("connection %d: Accept: %v", i, err)
		}
		if err := <-connected; err != nil {
			tb.Fatalf("connection %d: Connect: %v", i, err)
		}
		ps.Active, ps.Passive = append(ps.Active, act), append(ps.Passive, pas)
	}
	// The active side speaks first (iWARP): one round settles every
	// connection.
	ps.Round(tb)
	return ps
}

func (ps *Peers) newEnd(tb testing.TB, a nd.Adapter, cq nd.CompletionQueue) *PeerEnd {
	return ps.newEndOn(tb, a, mustConnector(tb, a), cq)
}

func (ps *Peers) newEndOn(tb testing.TB, a nd.Adapter, conn nd.Connector, cq nd.CompletionQueue) *PeerEnd {
	tb.Helper()
	if cq == nil {
		cq = mustCQ(tb, a, 4*PeerLimits.InboundEntries)
	}
	var ep nd.Endpoint
	var err error
	if ps.SRQ != nil && cq == ps.PassiveCQ {
		ep, err = nd.CreateEndpointWithSRQ(conn, cq, cq, ps.SRQ, PeerLimits)
	} else {
		ep, err = conn.CreateEndpoint(cq, cq, PeerLimits)
	}
	if err != nil {
		tb.Fatalf("CreateEndpoint: %v", err)
	}
	tb.Cleanup(func() { ep.Close() })
	e := &PeerEnd{Endpoint: ep, Connector: conn, CQ: cq, Buf: make([]byte, ps.Size)}
	mr, err := a.RegisterMemory(ps.ctx, e.Buf)
	if err != nil {
		tb.Fatalf("RegisterMemory: %v", err)
	}
	e.SGL = []nd.SGE{{Buffer: e.Buf, Region: mr}}
	return e
}

func (ps *Peers) postRecv(tb testing.TB, e *PeerEnd) {
	if err := e.Endpoint.Receive(&e.Recv, e.SGL); err != nil {
		tb.Fatalf("Receive: %v", err)
	}
}

// Round sends one message over every connection, active to passive, reaps
// the Send and Receive completions of all of them from the queues, checks
// each, and posts the Receives again. It allocates nothing.
func (ps *Peers) Round(tb testing.TB) {
	if ps.SRQ != nil {
		ps.roundSRQ(tb)
		return
	}
	for _, e := range ps.Active {
		if err := e.Endpoint.Send(&e.Send, e.SGL, 0); err != nil {
			tb.Fatalf("Send: %v", err)
		}
	}
	if ps.Shared {
		ps.reap(tb, ps.ActiveCQ, ps.N)
		ps.reap(tb, ps.PassiveCQ, ps.N)
	} else {
		for i := range ps.N {
			ps.reap(tb, ps.Active[i].CQ, 1)
			ps.reap(tb, ps.Passive[i].CQ, 1)
		}
	}
	for _, e := range ps.Passive {
		ps.postRecv(tb, e)
	}
}

// roundSRQ is Round over the shared receive queue: as many connections at a
// time as it has entries, their Receives posted first.
func (ps *Peers) roundSRQ(tb testing.TB) {
	for start := 0; start < ps.N; start += len(ps.srqRecvs) {
		end := min(start+len(ps.srqRecvs), ps.N)
		for k := range end - start {
			if err := ps.SRQ.Receive(&ps.srqRecvs[k], ps.srqSGLs[k]); err != nil {
				tb.Fatalf("shared Receive: %v", err)
			}
		}
		for _, e := range ps.Active[start:end] {
			if err := e.Endpoint.Send(&e.Send, e.SGL, 0); err != nil {
				tb.Fatalf("Send: %v", err)
			}
		}
		ps.reap(tb, ps.ActiveCQ, end-start)
		ps.reap(tb, ps.PassiveCQ, end-start)
	}
}

// reap takes want successful completions from cq, spinning.
func (ps *Peers) reap(tb testing.TB, cq nd.CompletionQueue, want int) {
	for got, spins := 0, 0; got < want; {
		n := cq.GetResults(ps.out[:min(len(ps.out), want-got)])
		for _, r := range ps.out[:n] {
			if r.Status != nd.Success || r.BytesTransferred != ps.Size {
				tb.Fatalf("completion: status %v, %d bytes; want Success, %d", r.Status, r.BytesTransferred, ps.Size)
			}
		}
		got += n
		if n == 0 {
			if spins++; spins%(1<<16) == 0 && ps.ctx.Err() != nil {
				tb.Fatalf("%d of %d completions after the deadline", got, want)
			}
		}
	}
}

// PingPong is one round trip of a Size-byte Send over connection i: the
// active end sends, the passive end answers, every completion is reaped
// from the queues.
func (ps *Peers) PingPong(tb testing.TB, i int) {
	a, p := ps.Active[i], ps.Passive[i]
	if err := a.Endpoint.Receive(&a.Recv, a.SGL); err != nil {
		tb.Fatalf("Receive: %v", err)
	}
	if err := a.Endpoint.Send(&a.Send, a.SGL, 0); err != nil {
		tb.Fatalf("Send: %v", err)
	}
	ps.reap(tb, p.CQ, 1) // the Receive (the Send's completion comes later)
	if err := p.Endpoint.Send(&p.Send, p.SGL, 0); err != nil {
		tb.Fatalf("Send: %v", err)
	}
	ps.postRecv(tb, p)
	ps.reapAll(tb, a.CQ, p.CQ, 3)
}

// SettlePolls is how many empty polls of each queue Settle makes: far
// more than any provider's bookkeeping needs to see a connection's
// set-up traffic end (provider/shm arms a link after 32 idle passes).
const SettlePolls = 1024

// Settle polls the queues of ps SettlePolls times each with nothing to
// find, as an application that goes on polling after connecting its
// peers, and returns how long that took. A provider that keeps links
// hot for a while after their last message pays for it here once; the
// polls that follow cost what polling idle connections costs. Settle
// fails tb if a poll finds a completion.
func (ps *Peers) Settle(tb testing.TB) time.Duration {
	tb.Helper()
	queues := []nd.CompletionQueue{ps.ActiveCQ, ps.PassiveCQ}
	if !ps.Shared {
		queues = queues[:0]
		for i := range ps.Active {
			queues = append(queues, ps.Active[i].CQ, ps.Passive[i].CQ)
		}
	}
	start := time.Now()
	for range SettlePolls {
		for _, cq := range queues {
			if n := cq.GetResults(ps.out); n != 0 {
				tb.Fatalf("settle: %d completions on an idle queue", n)
			}
		}
	}
	return time.Since(start)
}

// reapAll takes want completions from either of two queues.
func (ps *Peers) reapAll(tb testing.TB, x, y nd.CompletionQueue, want int) {
	for got, spins := 0, 0; got < want; spins++ {
		n := x.GetResults(ps.out[:want-got])
		if y != x {
			n += y.GetResults(ps.out[n : want-got])
		}
		for _, r := range ps.out[:n] {
			if r.Status != nd.Success {
				tb.Fatalf("completion: status %v", r.Status)
			}
		}
		got += n
		if n == 0 && spins%(1<<16) == 0 && ps.ctx.Err() != nil {
			tb.Fatalf("%d of %d completions after the deadline", got, want)
		}
	}
}

// PeerSRQEntries is the depth of the shared receive queue of
// BenchmarkPeers's RoundSRQ (MPI-sized: a pool far smaller than the
// connections).
const PeerSRQEntries = 256

// PeerCounts are the connection counts BenchmarkPeers measures.
var PeerCounts = []int{1, 10, 100, 1000}

// BenchmarkPeers measures provider p with many connections, every
// endpoint of a side on one completion queue, at each of counts:
//
//   - EmptyPoll: one GetResults on the shared queue with nothing to find,
//     once the set-up's traffic has settled (settle-us: the SettlePolls
//     polls of each queue that follow the set-up, in all).
//   - Round: one 64-byte Send over every connection, all completions
//     reaped (msg/s is the message rate); RoundOwnCQ is the same with a
//     queue per endpoint; RoundSRQ the same with the passive endpoints'
//     Receives on one shared receive queue of PeerSRQEntries (at most n),
//     as many Sends at a time as it holds (recv-buf-bytes is the Receive
//     buffers posted; skipped without shared receive queues).
//   - PingPong: 8-byte round trips, one connection after another
//     (half-rtt-ns), once the set-up's traffic has settled.
func BenchmarkPeers(b *testing.B, p nd.Provider, counts []int) {
	// Each case connects its own pairs and closes them when it ends, so
	// that one set of connections holds descriptors at a time.
	for _, n := range counts {
		b.Run(fmt.Sprintf("N=%d", n), func(b *testing.B) {
			b.Run("EmptyPoll", func(b *testing.B) {
				shared := NewPeers(b, p, n, 64, true)
				settle := shared.Settle(b)
				out := make([]*nd.Result, 8)
				b.ReportAllocs()
				for b.Loop() {
					if shared.ActiveCQ.GetResults(out) != 0 {
						b.Fatal("a completion on an idle queue")
					}
				}
				b.ReportMetric(float64(settle.Microseconds()), "settle-us")
			})
			b.Run("Round", func(b *testing.B) {
				shared := NewPeers(b, p, n, 64, true)
				b.ReportAllocs()
				for b.Loop() {
					shared.Round(b)
				}
				b.ReportMetric(float64(b.N*n)/b.Elapsed().Seconds(), "msg/s")
			})
			b.Run("RoundSRQ", func(b *testing.B) {
				srq := NewPeersSRQ(b, p, n, 64, min(n, PeerSRQEntries))
				b.ReportAllocs()
				for b.Loop() {
					srq.Round(b)
				}
				b.ReportMetric(float64(b.N*n)/b.Elapsed().Seconds(), "msg/s")
				b.ReportMetric(float64(srq.ReceiveBufferBytes()), "recv-buf-bytes")
			})
			b.Run("RoundOwnCQ", func(b *testing.B) {
				own := NewPeers(b, p, n, 64, false)
				for b.Loop() {
					own.Round(b)
				}
				b.ReportMetric(float64(b.N*n)/b.Elapsed().Seconds(), "msg/s")
			})
			b.Run("PingPong", func(b *testing.B) {
				small := NewPeers(b, p, n, 8, true)
				small.Settle(b)
				b.ReportAllocs()
				i := 0
				for b.Loop() {
					small.PingPong(b, i)
					i = (i + 1) % n
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/2, "half-rtt-ns")
			})
		})
	}
}

// IdleCost connects n pairs of provider p (both ends in this process, each
// endpoint with its own queue), lets them go idle after one message each,
// and reports what each endpoint costs: heap bytes (after a collection)
// and goroutines, against before the pairs existed.
func IdleCost(tb testing.TB, p nd.Provider, n int) (heapPerEndpoint, goroutinesPerEndpoint float64) {
	tb.Helper()
	return IdleCostOf(2*n, func() any { return NewPeers(tb, p, n, 64, false) })
}

// IdleCostOf reports what build adds to this process per endpoint of the
// endpoints it creates: heap bytes (after a collection) and goroutines,
// against before it ran. build returns what must stay alive until the
// measurement.
func IdleCostOf(endpoints int, build func() any) (heapPerEndpoint, goroutinesPerEndpoint float64) {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	g0 := runtime.NumGoroutine()
	kept := build()
	runtime.GC()
	runtime.ReadMemStats(&after)
	g1 := runtime.NumGoroutine()
	runtime.KeepAlive(kept)
	eps := float64(endpoints)
	return float64(after.HeapAlloc-before.HeapAlloc) / eps, float64(g1-g0) / eps
}
