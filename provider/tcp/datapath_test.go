package tcp_test

import (
	"testing"

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
