package ndtest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/godirect/nd"
)

// DataPath is a connected pair set up for measuring the data path alone:
// registered buffers on both sides, a window on the passive side that allows
// Read and Write, and reusable scatter/gather lists and Results. Its methods
// move real bytes and fail tb on any error; they allocate nothing.
type DataPath struct {
	Pair       *Pair
	ABuf, PBuf []byte // active and passive buffers
	Window     nd.MWDescriptor

	aMR, pMR    nd.MemoryRegion
	asgl, psgl  []nd.SGE
	pingA       []nd.SGE
	pingP       []nd.SGE
	ctx         context.Context
	cancel      context.CancelFunc
	renew       time.Time
	posted      int // pipelined Reads or Writes posted
	reaped      int // and reaped
	send, recv  nd.Result
	rsend, rrcv nd.Result
	rdma        []nd.Result
	out         []*nd.Result
}

// NewDataPath connects a pair of provider p with buffers of size bytes.
func NewDataPath(tb testing.TB, p nd.Provider, size int) *DataPath {
	tb.Helper()
	return newDataPath(tb, p, size, false)
}

// NewDataPathSRQ is NewDataPath with each endpoint on a shared receive
// queue of its own (PairConfig.SRQ), to compare with NewDataPath; it skips
// tb when the provider has no shared receive queues.
func NewDataPathSRQ(tb testing.TB, p nd.Provider, size int) *DataPath {
	tb.Helper()
	return newDataPath(tb, p, size, true)
}

func newDataPath(tb testing.TB, p nd.Provider, size int, srq bool) *DataPath {
	tb.Helper()
	limits := DefaultLimits
	limits.OutboundEntries, limits.InboundEntries = 64, 64
	d := &DataPath{out: make([]*nd.Result, 16), rdma: make([]nd.Result, 32)}
	d.Pair = NewPair(tb, p, PairConfig{ActiveLimits: limits, PassiveLimits: limits, CQEntries: 256, SRQ: srq})
	a, ps := d.Pair.Active, d.Pair.Passive
	d.ABuf, d.PBuf = make([]byte, size), make([]byte, size)
	d.aMR, d.pMR = a.Register(tb, d.ABuf), ps.Register(tb, d.PBuf)
	mw, err := ps.Adapter.CreateMemoryWindow(nil)
	if err != nil {
		tb.Fatal(err)
	}
	var bind nd.Result
	d.Window, err = ps.Endpoint.Bind(&bind, d.pMR, mw, d.PBuf, nd.FlagAllowRead|nd.FlagAllowWrite)
	if err != nil {
		tb.Fatal(err)
	}
	Expect(tb, ps.OutCQ, &bind, nd.Success, -1)
	d.pingA, d.pingP = make([]nd.SGE, 1), make([]nd.SGE, 1)
	tb.Cleanup(func() {
		if d.cancel != nil {
			d.cancel()
		}
	})
	d.asgl = []nd.SGE{{Buffer: d.ABuf, Region: d.aMR}}
	d.psgl = []nd.SGE{{Buffer: d.PBuf, Region: d.pMR}}
	// The active side speaks first, as iWARP transports require.
	d.SendReceive(tb)
	return d
}

// reap waits for want to complete on cq (spinning briefly, then blocking
// in Notify), and fails tb unless it is the next completion and succeeded.
func (d *DataPath) reap(tb testing.TB, cq nd.CompletionQueue, want *nd.Result) {
	for spins := 0; ; spins++ {
		if cq.GetResults(d.out[:1]) == 1 {
			if d.out[0] != want || want.Status != nd.Success {
				tb.Fatalf("completion %p with status %v, want the request's own Result %p with Success", d.out[0], d.out[0].Status, want)
			}
			return
		}
		if spins < 256 {
			continue
		}
		// GetResults just came back empty, so Notify fires for any
		// completion from now on: no wake-up is lost.
		if err := cq.Notify(d.waitContext(), nd.NotifyAny); err != nil {
			tb.Fatalf("no completion: Notify: %v", err)
		}
	}
}

// waitContext returns a context that ends Timeout after the last wait
// started, renewed only when most of it has passed, so that waiting
// allocates nothing in the steady state.
func (d *DataPath) waitContext() context.Context {
	now := time.Now()
	if d.ctx == nil || now.After(d.renew) {
		if d.cancel != nil {
			d.cancel()
		}
		d.ctx, d.cancel = context.WithTimeout(context.Background(), 2*Timeout)
		d.renew = now.Add(Timeout)
	}
	return d.ctx
}

// SendReceive posts a Receive on the passive side and a Send of the whole
// buffer on the active side, and reaps both.
func (d *DataPath) SendReceive(tb testing.TB) {
	a, p := d.Pair.Active, d.Pair.Passive
	if err := p.PostReceive(&d.recv, d.psgl); err != nil {
		tb.Fatal(err)
	}
	if err := a.Endpoint.Send(&d.send, d.asgl, 0); err != nil {
		tb.Fatal(err)
	}
	d.reap(tb, a.OutCQ, &d.send)
	d.reap(tb, p.InCQ, &d.recv)
}

// PingPong is one round trip: the active side sends the first n bytes of
// its buffer, the passive side sends them back.
func (d *DataPath) PingPong(tb testing.TB, n int) {
	a, p := d.Pair.Active, d.Pair.Passive
	d.pingA[0] = nd.SGE{Buffer: d.ABuf[:n], Region: d.aMR}
	d.pingP[0] = nd.SGE{Buffer: d.PBuf[:n], Region: d.pMR}
	asgl, psgl := d.pingA, d.pingP
	if err := p.PostReceive(&d.recv, psgl); err != nil {
		tb.Fatal(err)
	}
	if err := a.PostReceive(&d.rrcv, asgl); err != nil {
		tb.Fatal(err)
	}
	if err := a.Endpoint.Send(&d.send, asgl, 0); err != nil {
		tb.Fatal(err)
	}
	d.reap(tb, p.InCQ, &d.recv)
	if err := p.Endpoint.Send(&d.rsend, psgl, 0); err != nil {
		tb.Fatal(err)
	}
	d.reap(tb, a.InCQ, &d.rrcv)
	d.reap(tb, a.OutCQ, &d.send)
	d.reap(tb, p.OutCQ, &d.rsend)
}

// Read reads the passive window into the active buffer count times,
// keeping up to depth Reads in flight, and reaps them all.
func (d *DataPath) Read(tb testing.TB, count, depth int) {
	for range count {
		d.Stream(tb, false, depth)
	}
	d.Drain(tb)
}

// Write writes the active buffer into the passive window count times,
// keeping up to depth Writes in flight, and reaps them all.
func (d *DataPath) Write(tb testing.TB, count, depth int) {
	for range count {
		d.Stream(tb, true, depth)
	}
	d.Drain(tb)
}

// Stream posts one more Write (write) or Read of the whole buffer, first
// reaping the oldest one if depth are in flight. Drain reaps the rest.
func (d *DataPath) Stream(tb testing.TB, write bool, depth int) {
	depth = max(1, min(depth, len(d.rdma)))
	if !write {
		depth = min(depth, DefaultLimits.OutboundReadLimit)
	}
	if d.posted-d.reaped >= depth {
		d.reap(tb, d.Pair.Active.OutCQ, &d.rdma[d.reaped%len(d.rdma)])
		d.reaped++
	}
	r := &d.rdma[d.posted%len(d.rdma)]
	var err error
	if write {
		err = d.Pair.Active.Endpoint.Write(r, d.asgl, d.Window, 0, 0)
	} else {
		err = d.Pair.Active.Endpoint.Read(r, d.asgl, d.Window, 0, 0)
	}
	if err != nil {
		tb.Fatal(err)
	}
	d.posted++
}

// Drain reaps every Read or Write in flight.
func (d *DataPath) Drain(tb testing.TB) {
	for d.reaped < d.posted {
		d.reap(tb, d.Pair.Active.OutCQ, &d.rdma[d.reaped%len(d.rdma)])
		d.reaped++
	}
}

// CheckAllocs fails t if posting and reaping a Send/Receive pair, a Read or
// a Write over provider p allocates. Providers call it from a test that the
// race detector's build skips (it allocates on its own).
func CheckAllocs(t *testing.T, p nd.Provider) {
	d := NewDataPath(t, p, 4096)
	for _, c := range []struct {
		name string
		op   func()
	}{
		{"SendReceive", func() { d.SendReceive(t) }},
		{"PingPong", func() { d.PingPong(t, 8) }},
		{"Read", func() { d.Read(t, 1, 1) }},
		{"Write", func() { d.Write(t, 1, 1) }},
	} {
		c.op() // warm up
		if n := testing.AllocsPerRun(500, c.op); n != 0 {
			t.Errorf("%s: %v allocations per operation, want 0", c.name, n)
		}
	}
	t.Run("SRQ", func(t *testing.T) {
		d := NewDataPathSRQ(t, p, 4096)
		for _, c := range []struct {
			name string
			op   func()
		}{
			{"SendReceive", func() { d.SendReceive(t) }},
			{"PingPong", func() { d.PingPong(t, 8) }},
		} {
			c.op() // warm up
			if n := testing.AllocsPerRun(500, c.op); n != 0 {
				t.Errorf("%s on shared receive queues: %v allocations per operation, want 0", c.name, n)
			}
		}
	})
}

// Benchmark runs the data-path benchmarks over provider p: PingPong (one
// round trip of a Send each way; the half-rtt metric is half of it) at 8 B
// and 4 KiB, the same with the Receives on shared receive queues
// (PingPongSRQ; skipped by providers without them), and Read and Write bandwidth at 4 KiB, 64 KiB and 1 MiB with
// several requests in flight.
func Benchmark(b *testing.B, p nd.Provider) {
	// PingPongSRQ is the same over shared receive queues, to compare.
	pingPongs := []struct {
		name string
		path func(testing.TB, nd.Provider, int) *DataPath
	}{{"PingPong", NewDataPath}, {"PingPongSRQ", NewDataPathSRQ}}
	for _, size := range []int{8, 4096} {
		for _, pp := range pingPongs {
			b.Run(fmt.Sprintf("%s/%d", pp.name, size), func(b *testing.B) {
				d := pp.path(b, p, size)
				b.SetBytes(int64(2 * size))
				b.ReportAllocs()
				b.ResetTimer()
				start := time.Now()
				for b.Loop() {
					d.PingPong(b, size)
				}
				b.ReportMetric(float64(time.Since(start).Nanoseconds())/float64(b.N)/2, "half-rtt-ns")
			})
		}
	}
	for _, op := range []string{"Read", "Write"} {
		for _, size := range []int{4 << 10, 64 << 10, 1 << 20} {
			b.Run(fmt.Sprintf("%s/%d", op, size), func(b *testing.B) {
				d := NewDataPath(b, p, size)
				b.SetBytes(int64(size))
				b.ReportAllocs()
				b.ResetTimer()
				for b.Loop() {
					d.Stream(b, op == "Write", 8)
				}
				d.Drain(b)
			})
		}
	}
}

// CheckBytes fails t unless the DataPath operations of provider p move the
// bytes they claim: a Send/Receive, pipelined Writes and Reads, and a
// ping-pong, over buffers of size bytes, and the Send/Receive and ping-pong
// over shared receive queues (skipped without them). Benchmarks built on DataPath
// measure transfers that this shows really happen.
func CheckBytes(t *testing.T, p nd.Provider, size int) {
	d := NewDataPath(t, p, size)
	for i := range d.ABuf {
		d.ABuf[i] = byte(i * 7)
	}
	d.SendReceive(t)
	if string(d.PBuf) != string(d.ABuf) {
		t.Fatal("the Receive got bytes that differ from the Send")
	}
	clear(d.PBuf)
	d.Write(t, 5, 3)
	if string(d.PBuf) != string(d.ABuf) {
		t.Fatal("Write did not place the bytes")
	}
	clear(d.ABuf)
	d.Read(t, 5, 3)
	if string(d.PBuf) != string(d.ABuf) {
		t.Fatal("Read did not bring the bytes")
	}
	n := min(size, 100)
	for i := range d.ABuf[:n] {
		d.ABuf[i] = byte(i + 1)
	}
	d.PingPong(t, n)
	if string(d.PBuf[:n]) != string(d.ABuf[:n]) {
		t.Fatal("the ping-pong did not carry the bytes")
	}
	t.Run("SRQ", func(t *testing.T) {
		d := NewDataPathSRQ(t, p, size)
		for i := range d.ABuf {
			d.ABuf[i] = byte(i * 11)
		}
		d.SendReceive(t)
		if string(d.PBuf) != string(d.ABuf) {
			t.Fatal("the shared Receive got bytes that differ from the Send")
		}
		for i := range d.ABuf[:n] {
			d.ABuf[i] = byte(i + 3)
		}
		d.PingPong(t, n)
		if string(d.PBuf[:n]) != string(d.ABuf[:n]) {
			t.Fatal("the ping-pong over shared receive queues did not carry the bytes")
		}
	})
}
