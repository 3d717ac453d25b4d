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
				ndtest.CheckBytes(t, testProvider(t, shm.Config{OneSided: mode}), size)
			})
		}
	}
}
