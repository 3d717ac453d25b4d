package engine

import (
	"runtime"
	"sync/atomic"
	"testing"
	"unsafe"
)

// TestPlaceStoresLastByteOnce races Place against a poller as ND's RDMA
// ping-pong tools do: the placer waits for the poller's answer in byte 0
// and then places its value there; the poller waits for that value and
// answers in the same byte. If a placement stored the byte twice, an
// answer that fell between the two stores would be undone, and the poller
// would see the placed value again without a new placement: it would count
// more rounds than were placed. Go's built-in copy of one byte stores it
// twice; the same harness with it counts rounds over (logged, as the
// count depends on the processor).
func TestPlaceStoresLastByteOnce(t *testing.T) {
	if runtime.NumCPU() < 2 || runtime.GOMAXPROCS(0) < 2 {
		t.Skip("the race needs two processors running at once")
	}
	rounds := 1_000_000
	if testing.Short() {
		rounds = 100_000
	}
	if extra := placeRace(Place, rounds); extra != 0 {
		t.Fatalf("Place: the poller counted %d rounds more than the %d placed: the last byte was stored again after its answer", extra, rounds)
	}
	t.Logf("the built-in copy in the same race: %d rounds over %d", placeRace(func(dst, src []byte) int { return copy(dst, src) }, rounds), rounds)
}

// placeRace runs rounds placements of one byte with place against a
// poller goroutine, and returns how many rounds the poller counted beyond
// them.
func placeRace(place func(dst, src []byte) int, rounds int) int {
	var word [2]uint32 // byte 0 of word[0] is polled; aligned for the word loads
	p := (*byte)(unsafe.Pointer(&word[0]))
	dst := unsafe.Slice(p, 1)
	src := []byte{'X'}
	storeWord(&word[0], 'Y')
	var stop atomic.Bool
	seen := make(chan int)
	go func() {
		n := 0
		for {
			for loadWord(&word[0])&0xff != 'X' {
				if stop.Load() {
					seen <- n
					return
				}
			}
			n++
			storeWord(&word[0], 'Y')
		}
	}()
	for range rounds {
		for loadWord(&word[0])&0xff != 'Y' {
		}
		place(dst, src)
	}
	for loadWord(&word[0])&0xff != 'Y' {
	}
	stop.Store(true)
	return <-seen - rounds
}

// loadWord and storeWord reach the polled word out of the race detector's
// sight: the placement's plain byte store and the poller's accesses are
// ordered only by the hardware, which is what the test is about. They are
// never inlined, so each call loads afresh; an aligned 4-byte access is
// atomic on every platform Go supports.
//
//go:norace
//go:noinline
func loadWord(p *uint32) uint32 { return *p }

//go:norace
//go:noinline
func storeWord(p *uint32, v uint32) { *p = v }
