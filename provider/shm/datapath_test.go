package shm_test

import (
	"fmt"
	"testing"

	"github.com/godirect/nd/ndtest"
	"github.com/godirect/nd/provider/shm"
)

// TestDataPathAllocatesNothing: posting and reaping a Send/Receive pair, a
// Read and a Write allocate nothing, through the rings and process_vm_*.
func TestDataPathAllocatesNothing(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates on its own")
	}
	for _, mode := range []shm.OneSided{shm.OneSidedAuto, shm.OneSidedRing} {
		t.Run(fmt.Sprint(mode), func(t *testing.T) {
			ndtest.CheckAllocs(t, testProvider(t, shm.Config{OneSided: mode}))
		})
	}
}

// TestDataPathBytes checks the bytes the data-path operations move, so that
// the benchmarks measure transfers that really happen.
func TestDataPathBytes(t *testing.T) {
	for _, mode := range []shm.OneSided{shm.OneSidedAuto, shm.OneSidedRing} {
		for _, size := range []int{4096, 3 << 20} {
			t.Run(fmt.Sprint(mode, "/", size), func(t *testing.T) {
				d := ndtest.NewDataPath(t, testProvider(t, shm.Config{OneSided: mode}), size)
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
				d.PingPong(t, min(size, 4096))
			})
		}
	}
}
