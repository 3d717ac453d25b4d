package loop_test

import (
	"testing"

	"github.com/godirect/nd/ndtest"
	"github.com/godirect/nd/provider/loop"
)

// TestDataPathAllocatesNothing: posting and reaping a Send/Receive pair, a
// Read and a Write allocate nothing.
func TestDataPathAllocatesNothing(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates on its own")
	}
	ndtest.CheckAllocs(t, loop.New())
}

// TestDataPathBytes checks the bytes the benchmarked operations move.
func TestDataPathBytes(t *testing.T) { ndtest.CheckBytes(t, loop.New(), 4096) }

func BenchmarkDataPath(b *testing.B) { ndtest.Benchmark(b, loop.New()) }

// BenchmarkPeers measures many connections sharing one completion queue a
// side (ndtest.BenchmarkPeers).
func BenchmarkPeers(b *testing.B) { ndtest.BenchmarkPeers(b, loop.New(), ndtest.PeerCounts) }
