//go:build race

package shmring

import (
	"runtime"
	"sync/atomic"
	"unsafe"
)

// The race detector cannot see the happens-before edges that the ring's
// atomics carry through a shared mapping (it ignores memory outside the Go
// heap), so with both ends in one process it would report the buffers a
// record's receiver fills and its sender's owner reads as racing. As Go's
// own poller does for file descriptors (internal/poll's ioSync), race
// builds tell it: publishing releases a package-wide token, and finding
// published records or freed room acquires it.
var raceToken uint64

func raceRelease() { runtime.RaceReleaseMerge(unsafe.Pointer(&raceToken)) }
func raceAcquire() { runtime.RaceAcquire(unsafe.Pointer(&raceToken)) }

// storeUnordered is atomic under the race detector: the consumer polls the
// word with atomic loads, which would race with a plain store.
func storeUnordered(p *uint64, v uint64) { atomic.StoreUint64(p, v) }
