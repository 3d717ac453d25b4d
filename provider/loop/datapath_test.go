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

// TestDataPathBytes checks the bytes the data-path operations move, so that
// the benchmarks measure transfers that really happen.
func TestDataPathBytes(t *testing.T) {
	d := ndtest.NewDataPath(t, loop.New(), 4096)
	for i := range d.ABuf {
		d.ABuf[i] = byte(i * 7)
	}
	d.SendReceive(t)
	if string(d.PBuf) != string(d.ABuf) {
		t.Fatal("the Receive got bytes that differ from the Send")
	}
	clear(d.PBuf)
	d.Write(t, 3, 2)
	if string(d.PBuf) != string(d.ABuf) {
		t.Fatal("Write did not place the bytes")
	}
	clear(d.ABuf)
	d.Read(t, 3, 2)
	if string(d.PBuf) != string(d.ABuf) {
		t.Fatal("Read did not bring the bytes")
	}
	d.PingPong(t, 100)
}

func BenchmarkDataPath(b *testing.B) { ndtest.Benchmark(b, loop.New()) }
