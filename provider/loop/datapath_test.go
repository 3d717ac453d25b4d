package loop_test

import (
	"fmt"
	"testing"

	"github.com/godirect/nd"
	"github.com/godirect/nd/ndtest"
	"github.com/godirect/nd/provider/loop"
)

// fixture is a connected pair with registered buffers on both sides, a
// window on the passive side that allows Read and Write, and reusable
// scatter/gather lists and Results, so that the data path can be measured
// alone.
type fixture struct {
	pair             *ndtest.Pair
	aBuf, pBuf       []byte
	aMR, pMR         nd.MemoryRegion
	window           nd.MWDescriptor
	sgl, rsgl        []nd.SGE
	send, recv, rdma nd.Result
	out              []*nd.Result
}

func newFixture(tb testing.TB, size int) *fixture {
	f := &fixture{out: make([]*nd.Result, 4)}
	f.pair = ndtest.NewPair(tb, loop.New(), ndtest.PairConfig{})
	a, p := f.pair.Active, f.pair.Passive
	f.aBuf, f.pBuf = make([]byte, size), make([]byte, size)
	f.aMR, f.pMR = a.Register(tb, f.aBuf), p.Register(tb, f.pBuf)
	mw, err := p.Adapter.CreateMemoryWindow(nil)
	if err != nil {
		tb.Fatal(err)
	}
	var bind nd.Result
	f.window, err = p.Endpoint.Bind(&bind, f.pMR, mw, f.pBuf, nd.FlagAllowRead|nd.FlagAllowWrite)
	if err != nil {
		tb.Fatal(err)
	}
	ndtest.Expect(tb, p.OutCQ, &bind, nd.Success, -1)
	f.sgl = []nd.SGE{{Buffer: f.aBuf, Region: f.aMR}}
	f.rsgl = []nd.SGE{{Buffer: f.pBuf, Region: f.pMR}}
	return f
}

// reap takes one completion from cq, which must be want with Success.
func (f *fixture) reap(tb testing.TB, cq nd.CompletionQueue, want *nd.Result) {
	if n := cq.GetResults(f.out[:1]); n != 1 || f.out[0] != want || want.Status != nd.Success {
		tb.Fatalf("GetResults = %d, want the request's own successful Result (status %v)", n, want.Status)
	}
}

func (f *fixture) sendReceive(tb testing.TB) {
	a, p := f.pair.Active, f.pair.Passive
	if err := p.Endpoint.Receive(&f.recv, f.rsgl); err != nil {
		tb.Fatal(err)
	}
	if err := a.Endpoint.Send(&f.send, f.sgl, 0); err != nil {
		tb.Fatal(err)
	}
	f.reap(tb, a.OutCQ, &f.send)
	f.reap(tb, p.InCQ, &f.recv)
}

func (f *fixture) read(tb testing.TB) {
	a := f.pair.Active
	if err := a.Endpoint.Read(&f.rdma, f.sgl, f.window, 0, 0); err != nil {
		tb.Fatal(err)
	}
	f.reap(tb, a.OutCQ, &f.rdma)
}

func (f *fixture) write(tb testing.TB) {
	a := f.pair.Active
	if err := a.Endpoint.Write(&f.rdma, f.sgl, f.window, 0, 0); err != nil {
		tb.Fatal(err)
	}
	f.reap(tb, a.OutCQ, &f.rdma)
}

// TestDataPathAllocatesNothing: posting and reaping a Send/Receive pair, a
// Read and a Write allocate nothing.
func TestDataPathAllocatesNothing(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates on its own")
	}
	f := newFixture(t, 4096)
	for name, op := range map[string]func(testing.TB){"SendReceive": f.sendReceive, "Read": f.read, "Write": f.write} {
		op(t) // warm up
		if n := testing.AllocsPerRun(1000, func() { op(t) }); n != 0 {
			t.Errorf("%s: %v allocations per operation, want 0", name, n)
		}
	}
}

// TestDataPathBytes checks the bytes the fixture's operations move, so that
// the benchmarks measure transfers that really happen.
func TestDataPathBytes(t *testing.T) {
	f := newFixture(t, 4096)
	for i := range f.aBuf {
		f.aBuf[i] = byte(i * 7)
	}
	f.sendReceive(t)
	if string(f.pBuf) != string(f.aBuf) || f.recv.BytesTransferred != 4096 {
		t.Fatalf("Receive got %d bytes that differ from the Send", f.recv.BytesTransferred)
	}
	clear(f.pBuf)
	f.write(t)
	if string(f.pBuf) != string(f.aBuf) {
		t.Fatal("Write did not place the bytes")
	}
	clear(f.aBuf)
	f.read(t)
	if string(f.pBuf) != string(f.aBuf) {
		t.Fatal("Read did not bring the bytes")
	}
}

func BenchmarkSendReceive(b *testing.B) {
	for _, size := range []int{8, 4096} {
		b.Run(fmt.Sprint(size), func(b *testing.B) {
			f := newFixture(b, size)
			b.SetBytes(int64(size))
			b.ReportAllocs()
			for b.Loop() {
				f.sendReceive(b)
			}
		})
	}
}

func BenchmarkRead(b *testing.B)  { benchRDMA(b, (*fixture).read) }
func BenchmarkWrite(b *testing.B) { benchRDMA(b, (*fixture).write) }

func benchRDMA(b *testing.B, op func(*fixture, testing.TB)) {
	for _, size := range []int{4 << 10, 64 << 10, 1 << 20} {
		b.Run(fmt.Sprint(size), func(b *testing.B) {
			f := newFixture(b, size)
			b.SetBytes(int64(size))
			b.ReportAllocs()
			for b.Loop() {
				op(f, b)
			}
		})
	}
}
