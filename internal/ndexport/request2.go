package ndexport

import (
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/godirect/nd"
	"github.com/godirect/nd/internal/ndabi"
)

// request2 is one posted ND v2 request: the nd.Result the engine
// completes, first so that the *nd.Result a completion queue hands back is
// the address of its request2, and what ND2_RESULT reports beside the
// status.
type request2 struct {
	res   nd.Result
	ctx   uintptr     // the consumer's requestContext
	qp    *QueuePair2 // its queue pair (a shared Receive's: the one that took it)
	typ   uint32      // ND2_REQUEST_TYPE
	seq   uint64      // its place in its ring
	owner slotOwner   // what gives its slot back once it is reaped
}

// requestOf is the request2 whose Result res is. Every Result an ND v2
// completion queue hands back is one (ND v2's queues serve ND v2's queue
// pairs and shared receive queues only).
func requestOf(res *nd.Result) *request2 { return (*request2)(unsafe.Pointer(res)) }

// slotOwner gives a request's slot back when GetResults reaps it.
type slotOwner interface{ reaped(r *request2) }

// ring is the slots of one queue of a queue pair, used in post order: ND
// completes a queue pair's requests of one direction in post order, so a
// reaped request frees its own slot and every slot before it (those of
// requests that succeeded silently). A request that succeeded silently
// keeps its slot until a later one is reaped, as on hardware. reserve and
// commit are the poster's (under its lock); reaped is safe from any
// goroutine.
type ring struct {
	slots []request2
	head  atomic.Uint64 // the oldest slot not yet known free
	tail  uint64        // the next slot to post
}

func newRing(n int) *ring {
	r := &ring{slots: make([]request2, n)}
	for i := range r.slots {
		r.slots[i].owner = r
	}
	return r
}

// reserve returns the slot for the next request, or nil when every slot
// is taken (ND_NO_MORE_ENTRIES).
func (r *ring) reserve() *request2 {
	if r.tail-r.head.Load() >= uint64(len(r.slots)) {
		return nil
	}
	s := &r.slots[r.tail%uint64(len(r.slots))]
	s.seq = r.tail
	return s
}

// commit counts the slot reserve returned as posted.
func (r *ring) commit() { r.tail++ }

func (r *ring) reaped(q *request2) {
	for {
		h := r.head.Load()
		if q.seq < h || r.head.CompareAndSwap(h, q.seq+1) {
			return
		}
	}
}

// freeSlots are the slots of a shared receive queue, whose Receives
// complete in no order across its queue pairs: a slot is free again when
// its own Receive is reaped. Its methods are safe for concurrent use.
type freeSlots struct {
	mu   sync.Mutex
	free []*request2
	n    int
}

// grow adds slots until there are n.
func (f *freeSlots) grow(n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if n <= f.n {
		return
	}
	more := make([]request2, n-f.n)
	for i := range more {
		more[i].owner = f
		more[i].typ = ndabi.RequestReceive
		f.free = append(f.free, &more[i])
	}
	f.n = n
}

// take returns a free slot, or nil.
func (f *freeSlots) take() *request2 {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := len(f.free)
	if n == 0 {
		return nil
	}
	s := f.free[n-1]
	f.free = f.free[:n-1]
	return s
}

func (f *freeSlots) reaped(q *request2) {
	q.qp = nil
	f.mu.Lock()
	f.free = append(f.free, q)
	f.mu.Unlock()
}

// sgl2 converts the consumer's n ND2_SGE entries at p into dst: each names
// the registration of its token (unregistered{} if none), or, with inline,
// is copied when the request is posted. More entries than dst holds is
// ND_DATA_OVERRUN, an entry longer than maxLen ND_BUFFER_OVERFLOW, one that
// cannot be memory ND_ACCESS_VIOLATION, a nil array with entries
// ND_INVALID_PARAMETER_2.
func sgl2(ad *Adapter2, dst []nd.SGE, p *ndabi.SGE2, n uint32, maxLen int, inline bool) ([]nd.SGE, nd.Status) {
	switch {
	case n == 0:
		return dst[:0], nd.Success
	case uint64(n) > uint64(len(dst)):
		return nil, nd.ErrDataOverrun
	case p == nil:
		return nil, nd.ErrInvalidParameter2
	}
	src := unsafe.Slice(p, n)
	for i := range src {
		s := &src[i]
		if uint64(s.BufferLength) > uint64(maxLen) {
			return nil, nd.ErrBufferOverflow
		}
		buf, ok := consumerBytes(s.Buffer, uintptr(s.BufferLength))
		if !ok {
			return nil, nd.ErrAccessViolation
		}
		dst[i].Buffer, dst[i].Region = buf, nil
		if !inline {
			if mr, ok := ad.tokens.get(s.MemoryRegionToken); ok && mr != nil {
				dst[i].Region = mr
			} else {
				dst[i].Region = unregistered{}
			}
		}
	}
	return dst[:n], nd.Success
}
