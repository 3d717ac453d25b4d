package tcp_test

import (
	"net/netip"
	"testing"

	"github.com/godirect/nd"
	"github.com/godirect/nd/ndtest"
	"github.com/godirect/nd/provider/tcp"
)

// TestDataPathAllocatesNothing: over TCP too, posting and reaping a
// Send/Receive pair, a Read and a Write allocate nothing.
func TestDataPathAllocatesNothing(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates on its own")
	}
	ndtest.CheckAllocs(t, loopback())
}

// TestDataPathBytes checks the bytes the benchmarked operations move.
func TestDataPathBytes(t *testing.T) { ndtest.CheckBytes(t, loopback(), 200000) }

func BenchmarkDataPath(b *testing.B) { ndtest.Benchmark(b, loopback()) }

// perSide opens each adapter on a provider of its own, as two processes
// would: each side's link is its provider's only one, which the
// application's polls read directly (long payloads placed with readv),
// and its progress goroutine reads while the application waits.
type perSide struct{ cfg tcp.Config }

func (p perSide) Name() string                     { return "tcp" }
func (p perSide) Addresses() ([]netip.Addr, error) { return p.cfg.Addresses, nil }
func (p perSide) OpenAdapter(a netip.Addr) (nd.Adapter, error) {
	return tcp.New(p.cfg).OpenAdapter(a)
}

// TestDataPathBytesDirect is TestDataPathBytes with a provider per side,
// over payloads of a megabyte and more, with and without MPA CRC.
func TestDataPathBytesDirect(t *testing.T) {
	for _, crc := range []bool{false, true} {
		cfg := loopback().Config()
		cfg.CRC = crc
		ndtest.CheckBytes(t, perSide{cfg}, 1<<20+13)
	}
}

// TestDataPathAllocatesNothingDirect: with a provider per side, a
// Send/Receive, Writes and Reads of 256 KiB (payloads placed as they
// arrive) allocate nothing.
func TestDataPathAllocatesNothingDirect(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates on its own")
	}
	d := ndtest.NewDataPath(t, perSide{loopback().Config()}, 256<<10)
	for _, op := range []struct {
		name string
		run  func()
	}{
		{"Send/Receive", func() { d.SendReceive(t) }},
		{"Write", func() { d.Write(t, 4, 2) }},
		{"Read", func() { d.Read(t, 4, 2) }},
	} {
		op.run() // warm up
		if n := testing.AllocsPerRun(20, op.run); n != 0 {
			t.Errorf("%s of 256 KiB: %v allocations", op.name, n)
		}
	}
}

// BenchmarkDataPathCRC is BenchmarkDataPath with MPA CRC32c on, to weigh
// what the CRC costs.
func BenchmarkDataPathCRC(b *testing.B) {
	cfg := tcp.DefaultConfig()
	cfg.CRC = true
	cfg.Addresses = loopback().Config().Addresses
	ndtest.Benchmark(b, tcp.New(cfg))
}

// TestDataPathBytesNoSpin is TestDataPathBytes with the reader parking in
// the runtime's network poller at once (Config.Spin 0; the default polls).
func TestDataPathBytesNoSpin(t *testing.T) {
	cfg := loopback().Config()
	cfg.Spin = 0
	ndtest.CheckBytes(t, tcp.New(cfg), 200000)
}

// TestDataPathBytesFirstBuffer is TestDataPathBytes with the readers
// keeping their first buffer, as links under BBR do: long payloads are
// read from the socket straight into place.
func TestDataPathBytesFirstBuffer(t *testing.T) {
	tcp.KeepFirstBuffer(t)
	ndtest.CheckBytes(t, loopback(), 200000)
}

// TestConformanceFirstBuffer runs the conformance suite with the readers
// keeping their first buffer.
func TestConformanceFirstBuffer(t *testing.T) {
	tcp.KeepFirstBuffer(t)
	ndtest.Run(t, loopback())
}

// BenchmarkPeers measures many connections sharing one completion queue a
// side (ndtest.BenchmarkPeers).
func BenchmarkPeers(b *testing.B) { ndtest.BenchmarkPeers(b, loopback(), ndtest.PeerCounts) }

// BenchmarkIdleConnections reports what an idle connection's endpoint
// costs (ndtest.IdleCost) with 4000 connections in this process, both ends
// here: heap bytes and goroutines per endpoint.
func BenchmarkIdleConnections(b *testing.B) {
	for range b.N {
		heap, gs := ndtest.IdleCost(b, loopback(), 4000)
		b.ReportMetric(heap, "heap-B/endpoint")
		b.ReportMetric(gs, "goroutines/endpoint")
	}
}
