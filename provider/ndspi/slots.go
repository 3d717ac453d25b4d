package ndspi

import (
	"slices"
	"sync"

	"github.com/godirect/nd"
)

// The request slots of the data path, and the names the provider carries
// back for them. They are the same for ND v1 and v2 and hold no memory of
// the provider's (the v1 ND_RESULTs live in memory of their own, one per
// slot, outside the Go heap): a pool per queue (an endpoint's inbound and
// outbound queues, a shared receive queue), a table per adapter that names
// the pools, and the names themselves.
//
// Every request is posted to the provider signaled, FlagSilentSuccess or
// not: a silent success that the provider keeps to itself cannot tell when
// its slot is free again (ND lets it leave no trace), so the provider's
// completion says so, and GetResults drops the successful completions of
// silent requests instead of handing them back.

// slotState is where a slot stands.
type slotState uint8

const (
	slotFree      slotState = iota
	slotPosted              // the provider holds the request
	slotCompleted           // its completion was taken from the provider and waits in a queue's backlog
)

// record is one posted request: what GetResults needs to hand back the
// caller's Result.
type record struct {
	res *nd.Result
	// bytes is the request's byte count (its scatter/gather list's), for
	// completions that do not carry it (ND v2 reports bytes for
	// Receives only).
	bytes  int
	seq    uint64 // post order within the pool
	silent bool   // FlagSilentSuccess: a successful completion is dropped
	// remote: a Read or Write whose every local entry lay within a live
	// registration, so that an ND_ACCESS_VIOLATION is the peer's refusal
	// (nd.CauseRemoteAccess), as the engine reports it; any other
	// request's is this side's (nd.CauseLocalAccess).
	remote bool
	state  slotState
}

// pool is the slots of one queue: as many as the queue's depth, so that a
// request holds its slot from its post until GetResults hands its
// completion back (nd's depth accounting). Its methods are safe for
// concurrent use: posts take slots under the endpoint's lock, completion
// queues give them back under theirs.
type pool struct {
	owner reaper // told after each of its requests is handed back

	mu     sync.Mutex
	recs   []record
	free   []uint32
	seq    uint64
	posted int // slots in state slotPosted
}

// reaper is what a pool's queue belongs to (an endpoint, a shared receive
// queue): reaped is called after one of its requests was handed back to
// the caller, with the completion queue's lock held (it takes no
// completion queue's lock).
type reaper interface{ reaped() }

// newPool returns a pool of n slots that tells owner of its reaped
// requests.
func newPool(n int, owner reaper) *pool {
	p := &pool{owner: owner, recs: make([]record, n), free: make([]uint32, n)}
	for i := range p.free {
		p.free[i] = uint32(n - 1 - i) // slot 0 first
	}
	return p
}

// take reserves a slot for the request of res; false when every slot is
// held (ErrNoMoreEntries).
func (p *pool) take(res *nd.Result, bytes int, silent, remote bool) (uint32, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := len(p.free)
	if n == 0 {
		return 0, false
	}
	i := p.free[n-1]
	p.free = p.free[:n-1]
	p.seq++
	p.recs[i] = record{res: res, bytes: bytes, seq: p.seq, silent: silent, remote: remote, state: slotPosted}
	p.posted++
	return i, true
}

// untake gives back slot i of a request that the provider refused.
func (p *pool) untake(i uint32) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if int(i) < len(p.recs) && p.recs[i].state == slotPosted {
		p.recs[i] = record{}
		p.free = append(p.free, i)
		p.posted--
	}
}

// complete records the provider's completion of slot i and returns its
// request; ok is false for a slot that holds no posted request (a name
// the provider made up, or a second completion). With keep the slot stays
// held (slotCompleted) until done; otherwise it is free again.
func (p *pool) complete(i uint32, keep bool) (r record, ok bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if int(i) >= len(p.recs) || p.recs[i].state != slotPosted {
		return record{}, false
	}
	r = p.recs[i]
	p.posted--
	if keep {
		p.recs[i].state = slotCompleted
		return r, true
	}
	p.recs[i] = record{}
	p.free = append(p.free, i)
	return r, true
}

// done frees slot i, whose completion complete kept.
func (p *pool) done(i uint32) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if int(i) < len(p.recs) && p.recs[i].state == slotCompleted {
		p.recs[i] = record{}
		p.free = append(p.free, i)
	}
}

// outstanding is the number of requests the provider holds.
func (p *pool) outstanding() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.posted
}

// held is the number of slots not free.
func (p *pool) held() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.recs) - len(p.free)
}

// abandon completes every request the provider still holds, in post
// order, as complete(i, true) would, and returns their slots: the
// Receives of a shared receive queue that no endpoint took, which ND v2's
// queue does not complete when it goes.
func (p *pool) abandon() []uint32 {
	p.mu.Lock()
	defer p.mu.Unlock()
	var slots []uint32
	for i := range p.recs {
		if p.recs[i].state == slotPosted {
			slots = append(slots, uint32(i))
		}
	}
	slices.SortFunc(slots, func(a, b uint32) int {
		switch {
		case p.recs[a].seq < p.recs[b].seq:
			return -1
		case p.recs[a].seq > p.recs[b].seq:
			return 1
		}
		return 0
	})
	for _, i := range slots {
		p.recs[i].state = slotCompleted
		p.posted--
	}
	return slots
}

// result returns the caller's Result of slot i (nil for a free slot).
func (p *pool) result(i uint32) *nd.Result {
	p.mu.Lock()
	defer p.mu.Unlock()
	if int(i) >= len(p.recs) {
		return nil
	}
	return p.recs[i].res
}

// queues are the pools of one endpoint (in for Receives, out for the
// rest; in is nil on a shared receive queue) or of one shared receive
// queue (in only).
type queues struct {
	in, out *pool
}

// pool is the queues' pool of Receives (inbound) or of the other requests.
func (q *queues) pool(inbound bool) *pool {
	if inbound {
		return q.in
	}
	return q.out
}

// table names the queues of an adapter's endpoints and shared receive
// queues with 32-bit ids that the provider carries back: ND v2's
// QueuePairContext and RequestContext, and the word beside each of ND
// v1's ND_RESULTs. An id is an index and a generation, so that the id of
// queues that were removed names no later ones. Its methods are safe for
// concurrent use.
type table struct {
	mu      sync.RWMutex
	entries []tableEntry
	free    []uint32
}

type tableEntry struct {
	q   *queues
	gen uint32
}

// Ids are 24 bits of index (plus one: 0 names nothing) and 8 of
// generation.
const (
	tableIndexBits = 24
	tableIndexMask = 1<<tableIndexBits - 1
	maxTable       = tableIndexMask - 1
)

// add names q; false when every id is in use.
func (t *table) add(q *queues) (uint32, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	var i uint32
	if n := len(t.free); n > 0 {
		i = t.free[n-1]
		t.free = t.free[:n-1]
	} else {
		if len(t.entries) >= maxTable {
			return 0, false
		}
		i = uint32(len(t.entries))
		t.entries = append(t.entries, tableEntry{})
	}
	e := &t.entries[i]
	e.q = q
	return e.gen<<tableIndexBits | (i + 1), true
}

// get returns the queues id names, or nil.
func (t *table) get(id uint32) *queues {
	i := id&tableIndexMask - 1
	t.mu.RLock()
	defer t.mu.RUnlock()
	if id&tableIndexMask == 0 || int(i) >= len(t.entries) {
		return nil
	}
	e := &t.entries[i]
	if e.gen != id>>tableIndexBits {
		return nil
	}
	return e.q
}

// remove gives id back.
func (t *table) remove(id uint32) {
	i := id&tableIndexMask - 1
	t.mu.Lock()
	defer t.mu.Unlock()
	if id&tableIndexMask == 0 || int(i) >= len(t.entries) {
		return
	}
	e := &t.entries[i]
	if e.q == nil || e.gen != id>>tableIndexBits {
		return
	}
	e.q = nil
	e.gen = (e.gen + 1) & (1<<(32-tableIndexBits) - 1)
	t.free = append(t.free, i)
}

// ND v2's request contexts: a queue pair's requests carry their slot, and
// the queue pair's context (QueuePairContext) the table id of its queues;
// a shared receive queue's Receives carry srqContext, the queue's table id
// and the slot, since they complete with the context of whichever queue
// pair took them.
const srqContext = 1 << 63

// requestContext is the context of slot of a queue pair's request.
func requestContext(slot uint32) uint64 { return uint64(slot) }

// srqRequestContext is the context of slot of the shared receive queue
// whose table id is id.
func srqRequestContext(id, slot uint32) uint64 {
	return srqContext | uint64(id)<<32 | uint64(slot)
}

// parseRequestContext splits a context: the shared receive queue's id
// (when srq is true) and the slot.
func parseRequestContext(c uint64) (id, slot uint32, srq bool) {
	return uint32(c>>32) &^ (srqContext >> 32), uint32(c), c&srqContext != 0
}

// ND v1's ND_RESULTs each have a word beside them (ndspi's, not the
// provider's) naming their queues and slot: the table id, then the slot
// with v1Inbound set for a Receive.
const v1Inbound = 1 << 31

// v1Tag is the word beside the ND_RESULT of slot of the queues id.
func v1Tag(id, slot uint32, inbound bool) uint64 {
	t := uint64(id)<<32 | uint64(slot)
	if inbound {
		t |= v1Inbound
	}
	return t
}

// parseV1Tag splits the word v1Tag made.
func parseV1Tag(t uint64) (id, slot uint32, inbound bool) {
	return uint32(t >> 32), uint32(t) &^ v1Inbound, uint32(t)&v1Inbound != 0
}

// backlog is a completion queue's completions that were taken from the
// provider and not yet handed back: those Notify took to tell a silent
// success from a completion to report, those a close drained, and the
// Receives of a shared receive queue completed when it closed. A FIFO; its
// owner's lock guards it.
type backlog struct {
	items []backlogItem
	head  int
}

type backlogItem struct {
	res  *nd.Result
	pool *pool
	slot uint32
}

func (b *backlog) len() int { return len(b.items) - b.head }

func (b *backlog) push(it backlogItem) {
	if b.head > 0 && b.head >= len(b.items)/2 {
		n := copy(b.items, b.items[b.head:])
		clear(b.items[n:])
		b.items, b.head = b.items[:n], 0
	}
	b.items = append(b.items, it)
}

// pop takes the oldest completion out; its slot is the caller's to free
// (pool.done).
func (b *backlog) pop() backlogItem {
	it := b.items[b.head]
	b.items[b.head] = backlogItem{}
	b.head++
	return it
}
