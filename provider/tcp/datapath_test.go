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
func TestDataPathBytes(t *testing.T) {
	d := ndtest.NewDataPath(t, loopback(), 200000)
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
	d.PingPong(t, 100)
}

func BenchmarkDataPath(b *testing.B) { ndtest.Benchmark(b, loopback()) }

// BenchmarkDataPathCRC is BenchmarkDataPath with MPA CRC32c on, to weigh
// what the CRC costs.
func BenchmarkDataPathCRC(b *testing.B) {
	cfg := tcp.DefaultConfig()
	cfg.CRC = true
	cfg.Addresses = loopback().Config().Addresses
	ndtest.Benchmark(b, tcp.New(cfg))
}
