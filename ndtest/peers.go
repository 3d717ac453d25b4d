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
	a, b := OpenAdapters(tb, p)
	c, cancel := context.WithTimeout(context.Background(), Timeout+time.Duration(n)*10*time.Millisecond)
	tb.Cleanup(cancel)
	ps := &Peers{N: n, Size: size, Shared: shared, out: make([]*nd.Result, 64), ctx: c}
	cqSize := 2*n*PeerLimits.InboundEntries + 16
	if shared {
		ps.ActiveCQ, ps.PassiveCQ = mustCQ(tb, a, cqSize), mustCQ(tb, b, cqSize)
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
		ps.postRecv(tb, pas)
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
	ep, err := conn.CreateEndpoint(cq, cq, PeerLimits)
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

// PeerCounts are the connection counts BenchmarkPeers measures.
var PeerCounts = []int{1, 10, 100, 1000}

// BenchmarkPeers measures provider p with many connections, every
// endpoint of a side on one completion queue, at each of counts:
//
//   - EmptyPoll: one GetResults on the shared queue with nothing to find.
//   - Round: one 64-byte Send over every connection, all completions
//     reaped (msg/s is the message rate); RoundOwnCQ is the same with a
//     queue per endpoint.
//   - PingPong: 8-byte round trips, one connection after another
//     (half-rtt-ns).
func BenchmarkPeers(b *testing.B, p nd.Provider, counts []int) {
	// Each case connects its own pairs and closes them when it ends, so
	// that one set of connections holds descriptors at a time.
	for _, n := range counts {
		b.Run(fmt.Sprintf("N=%d", n), func(b *testing.B) {
			b.Run("EmptyPoll", func(b *testing.B) {
				shared := NewPeers(b, p, n, 64, true)
				out := make([]*nd.Result, 8)
				b.ReportAllocs()
				for b.Loop() {
					if shared.ActiveCQ.GetResults(out) != 0 {
						b.Fatal("a completion on an idle queue")
					}
				}
			})
			b.Run("Round", func(b *testing.B) {
				shared := NewPeers(b, p, n, 64, true)
				b.ReportAllocs()
				for b.Loop() {
					shared.Round(b)
				}
				b.ReportMetric(float64(b.N*n)/b.Elapsed().Seconds(), "msg/s")
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
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	g0 := runtime.NumGoroutine()
	ps := NewPeers(tb, p, n, 64, false)
	runtime.GC()
	runtime.ReadMemStats(&after)
	g1 := runtime.NumGoroutine()
	runtime.KeepAlive(ps)
	eps := float64(2 * n)
	return float64(after.HeapAlloc-before.HeapAlloc) / eps, float64(g1-g0) / eps
}
