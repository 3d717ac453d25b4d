//go:build linux || windows || darwin || freebsd

package shm

import (
	"runtime"
	"sync"
	"time"

	"github.com/godirect/nd"
	"github.com/godirect/nd/internal/engine"
	"github.com/godirect/nd/internal/shmring"
)

// The window table. Each side of a connection publishes the windows bound
// to its endpoint in a table of its own in the shared segment, so that the
// peer (the initiator of a Read or Write) can check the access and copy the
// payload itself, without any goroutine of this side (the target). The
// target's engine stays authoritative: the link publishes only what the
// engine bound (engine.WindowTable) and withdraws it before the engine
// reports an unbinding; an access the table does not clearly allow goes
// through the ring, where the target's engine decides.
//
// A table is tableEntries cache lines. Entry layout (little-endian, each
// word accessed atomically):
//
//	 0 seq      u64  target: seqlock sequence, odd while the entry changes
//	 8 token    u32  target: the window's token (0: empty)
//	12 rights   u32  target: rightRead | rightWrite
//	16 base     u64  target: the window's base address (its descriptor's
//	                 Base; the address in the target's process)
//	24 length   u64  target: the window's length
//	32 segment  u32  target: the AllocateMemory segment holding the window
//	                 (its memfd was passed to the peer), 0: none
//	40 segOff   u64  target: the window's offset in that segment
//	48 inflight u32  initiator: copies in progress against the entry
//
// The target writes entries under its table lock from a private shadow
// (it never reads its own table back: the peer can scribble on it). To
// publish it makes seq odd, stores the fields and makes seq even. To
// withdraw an entry it does the same with token and rights 0, then waits
// until inflight is 0 (spinning briefly, then on a shared futex on the
// word), at most ResponseTimeout.
//
// The initiator reads seq (even), every field once, and seq again
// (unchanged); it validates its access against that snapshot, raises
// inflight, and checks seq once more before it copies; after the copy it
// lowers inflight and wakes the futex if seq moved. All accesses are
// sequentially consistent, so either the target's load of inflight sees
// the raised count (and waits for the copy) or the initiator's second load
// of seq sees the withdrawal (and does not copy).
const (
	tableEntries = 128
	entrySize    = 64
	tableSize    = tableEntries * entrySize

	eSeq      = 0
	eToken    = 8
	eRights   = 12
	eBase     = 16
	eLength   = 24
	eSegment  = 32
	eSegOff   = 40
	eInflight = 48

	rightRead  = 1
	rightWrite = 2
)

type slotState uint8

const (
	slotFree slotState = iota
	slotPublished
	slotDraining // withdrawn; a copy may still be in flight
)

// pubSlot is the target's private record of one entry.
type pubSlot struct {
	state slotState
	lost  bool // the wait timed out: never reused, buf pinned
	token uint32
	seq   uint64
	buf   []byte
}

// pubTable is the table this side publishes (as the target).
type pubTable struct {
	mu      sync.Mutex
	cond    *sync.Cond // on mu: waiters fell
	mem     []byte     // nil once the link is cleaned up
	slots   [tableEntries]pubSlot
	waiters int // WindowUnbound calls waiting for inflight
}

func (t *pubTable) entry(i int) []byte {
	return t.mem[i*entrySize : (i+1)*entrySize : (i+1)*entrySize]
}

// writeLocked stores an entry under the seqlock.
func (t *pubTable) writeLocked(i int, token, rights uint32, base, length uint64, seg uint32, segOff uint64) {
	s, e := &t.slots[i], t.entry(i)
	seq := shmring.Word64(e, eSeq)
	s.seq++
	shmring.Store64(seq, s.seq)
	shmring.Store32(shmring.Word32(e, eToken), token)
	shmring.Store32(shmring.Word32(e, eRights), rights)
	shmring.Store64(shmring.Word64(e, eBase), base)
	shmring.Store64(shmring.Word64(e, eLength), length)
	shmring.Store32(shmring.Word32(e, eSegment), seg)
	shmring.Store64(shmring.Word64(e, eSegOff), segOff)
	s.seq++
	shmring.Store64(seq, s.seq)
}

// withdrawLocked empties a published entry; the slot drains.
func (t *pubTable) withdrawLocked(i int) {
	t.writeLocked(i, 0, 0, 0, 0, 0, 0)
	t.slots[i].state = slotDraining
}

// find returns the slot of token (published preferred to draining), or -1.
func (t *pubTable) find(token uint32) int {
	found := -1
	for i := range t.slots {
		s := &t.slots[i]
		if s.token != token || s.lost || s.state == slotFree {
			continue
		}
		if s.state == slotPublished {
			return i
		}
		found = i
	}
	return found
}

// WindowBound implements engine.WindowTable: the window is published for
// the peer, unless the table is full (accesses then take the ring).
func (l *link) WindowBound(token uint32, base uint64, buf []byte, rights nd.Flags) {
	if l.t.p.cfg.OneSided != OneSidedAuto || len(buf) == 0 || token == 0 {
		return
	}
	var r uint32
	if rights&nd.FlagAllowRead != 0 {
		r |= rightRead
	}
	if rights&nd.FlagAllowWrite != 0 {
		r |= rightWrite
	}
	t := &l.pub
	t.mu.Lock()
	if t.mem == nil || l.life.closed() {
		t.mu.Unlock()
		return
	}
	i := -1
	if t.slots[token%tableEntries].state == slotFree {
		i = int(token % tableEntries)
	} else {
		for j := range t.slots {
			if t.slots[j].state == slotFree {
				i = j
				break
			}
		}
	}
	if i < 0 {
		t.mu.Unlock()
		return
	}
	seg, segOff, _ := l.shareSegment(buf)
	s := &t.slots[i]
	s.state, s.token, s.buf = slotPublished, token, buf
	t.writeLocked(i, token, r, base, uint64(len(buf)), seg, segOff)
	t.mu.Unlock()
	// An unbinding that raced with this call (the connection ending) may
	// have come first: withdraw what the engine no longer grants.
	if ep := l.ep.Load(); ep != nil {
		mem, f := ep.AccessFault(token, base, len(buf), r&rightWrite != 0)
		if f != engine.FaultNone || len(mem) != len(buf) || addrOf(mem) != addrOf(buf) {
			l.WindowUnbound(token)
		}
	}
}

// WindowUnbound implements engine.WindowTable: the entry is withdrawn, and
// the call returns once no copy of the peer's is in flight against it. A
// peer that does not lower its count within ResponseTimeout ends the
// connection (ND_IO_TIMEOUT), and the window's memory stays referenced for
// the life of the process, so that a late copy never hits reused memory.
func (l *link) WindowUnbound(token uint32) {
	t := &l.pub
	t.mu.Lock()
	i := -1
	if t.mem != nil {
		i = t.find(token)
	}
	if i < 0 {
		t.mu.Unlock()
		return
	}
	s := &t.slots[i]
	if s.state == slotPublished {
		t.withdrawLocked(i)
	}
	t.waiters++
	infl := shmring.Word32(t.entry(i), eInflight)
	t.mu.Unlock()
	ok := waitIdle(infl, l.t.p.cfg.ResponseTimeout)
	t.mu.Lock()
	t.waiters--
	if s.state == slotDraining && s.token == token && !s.lost {
		if ok {
			s.state, s.token, s.buf = slotFree, 0, nil
		} else {
			s.lost = true
			pinMemory(s.buf)
		}
	}
	t.cond.Broadcast()
	t.mu.Unlock()
	if !ok {
		l.shutdown(nd.ErrIOTimeout, true)
	}
}

// drain withdraws every entry and waits for the peer's copies (at most d),
// then forgets the table; cleanup calls it before unmapping the segment.
func (t *pubTable) drain(d time.Duration) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for t.waiters > 0 {
		t.cond.Wait()
	}
	if t.mem == nil {
		return
	}
	deadline := time.Now().Add(d)
	for i := range t.slots {
		s := &t.slots[i]
		if s.state == slotPublished {
			t.withdrawLocked(i)
		}
		if s.state != slotDraining || s.lost {
			continue
		}
		if waitIdle(shmring.Word32(t.entry(i), eInflight), time.Until(deadline)) {
			s.state, s.token, s.buf = slotFree, 0, nil
		} else {
			s.lost = true
			pinMemory(s.buf)
		}
	}
	t.mem = nil
}

// waitIdle waits until *p is 0, at most d.
func waitIdle(p *uint32, d time.Duration) bool {
	for range 64 {
		if shmring.Load32(p) == 0 {
			return true
		}
		runtime.Gosched()
	}
	deadline := time.Now().Add(d)
	for {
		v := shmring.Load32(p)
		if v == 0 {
			return true
		}
		left := time.Until(deadline)
		if left <= 0 {
			return false
		}
		futexSleep(p, v, left)
	}
}

// shareSegment returns the AllocateMemory segment that holds all of buf and
// buf's offset in it, after passing the segment's memfd to the peer the
// first time; ok is false if buf is not in such a segment or the memfd
// could not be passed. Safe for concurrent use; it may be called with mu
// or the window table's mu held (sharedMu and the socket's lock are
// taken after them).
func (l *link) shareSegment(buf []byte) (id uint32, off uint64, ok bool) {
	id, _, off, _, ok = allocationOf(buf, false)
	if !ok {
		return 0, 0, false
	}
	l.sharedMu.Lock()
	defer l.sharedMu.Unlock()
	if l.shared[id] {
		return id, off, true
	}
	// Not passed yet: look again for its memfd (and use what this lookup
	// finds: the memory may have been freed and reallocated meanwhile).
	id, size, off, fd, ok := allocationOf(buf, true)
	if !ok {
		return 0, 0, false
	}
	err := l.sendSegment(id, size, fd)
	closeShared(fd)
	if err != nil {
		return 0, 0, false
	}
	if l.shared == nil {
		l.shared = make(map[uint32]bool)
	}
	l.shared[id] = true
	return id, off, true
}

// sendSegment passes an AllocateMemory segment's memfd (section) to the
// peer:
//
//	segment  (either): 'M' id u32 size u64 + the memfd (section handle)
func (l *link) sendSegment(id uint32, size int, fd osHandle) error {
	b := []byte{msgSegment}
	b = appendU32(b, id)
	b = appendU64(b, uint64(size))
	return l.send(b, []osHandle{fd})
}

func (l *link) peerSegment(id uint32) []byte {
	l.segMu.RLock()
	defer l.segMu.RUnlock()
	return l.peerSegs[id]
}

// direct carries out the Read or Write wr itself against the peer's
// window table, if the table allows it and no earlier message of this
// connection is still unacknowledged (so the copy cannot overtake anything
// the target has not handled yet: a SendAndInvalidate, a Write through the
// ring, a Read's response). It reports whether the request is complete.
// Anything it does not take goes through the ring, where the target's
// engine decides.
//
// Only Transmit adds to unconf, and Transmit runs on the engine's pump,
// one goroutine at a time, as direct does: once direct found unconf empty
// (under mu), it stays empty until Transmit's next ring request
// (txQuiet), so that a run of direct copies takes no lock.
func (l *link) direct(wr *engine.WorkRequest) bool {
	if wr.Length == 0 || l.t.p.cfg.OneSided != OneSidedAuto {
		return false
	}
	if !l.txQuiet {
		l.mu.Lock()
		l.txQuiet = !l.life.closed() && l.unconf.Len() == 0
		l.mu.Unlock()
		if !l.txQuiet {
			return false
		}
	}
	// shutdown sets closed before cleanup waits for the endpoint's
	// Transmit to end (engine.Endpoint.WaitTransmit): either this sees
	// closed and does not copy, or cleanup waits for this copy.
	return !l.life.closed() && l.directCopy(wr)
}

// directCopy finds wr's window in the peer's table and copies under the
// seqlock and in-flight protocol. Every field is read once; the checks
// are overflow-safe. A wrong table only makes this side copy to or from
// the peer's own memory (through the kernel, or through the peer's segment
// mapped here, within its bounds) or fall back.
func (l *link) directCopy(wr *engine.WorkRequest) bool {
	token := wr.Remote.Token
	addr := wr.Remote.Base + wr.Offset // Transmit checked it does not wrap
	n := uint64(wr.Length)
	write := wr.Op == engine.OpWrite
	need := uint32(rightRead)
	if write {
		need = rightWrite
	}
	tab := l.peerTab
	start := int(token % tableEntries)
	for k := range tableEntries {
		i := (start + k) % tableEntries
		e := tab[i*entrySize : (i+1)*entrySize : (i+1)*entrySize]
		if token == 0 || shmring.Load32(shmring.Word32(e, eToken)) != token {
			continue
		}
		seq := shmring.Word64(e, eSeq)
		s1 := shmring.Load64(seq)
		tok := shmring.Load32(shmring.Word32(e, eToken))
		rights := shmring.Load32(shmring.Word32(e, eRights))
		base := shmring.Load64(shmring.Word64(e, eBase))
		length := shmring.Load64(shmring.Word64(e, eLength))
		segID := shmring.Load32(shmring.Word32(e, eSegment))
		segOff := shmring.Load64(shmring.Word64(e, eSegOff))
		if s1&1 != 0 || shmring.Load64(seq) != s1 || tok != token {
			return false
		}
		if rights&need == 0 || addr < base {
			return false
		}
		off := addr - base
		if off > length || n > length-off {
			return false
		}
		var mem []byte
		if segID != 0 {
			seg := l.dSeg
			if segID != l.dSegID {
				seg = l.peerSegment(segID)
				if seg == nil && l.pullSegments() {
					seg = l.peerSegment(segID)
				}
				if seg != nil {
					l.dSegID, l.dSeg = segID, seg
				}
			}
			if seg != nil {
				size := uint64(len(seg))
				if segOff <= size && off <= size-segOff && n <= size-segOff-off {
					mem = seg[segOff+off : segOff+off+n]
				}
			}
		}
		if mem == nil && !l.pvmPeer.Load() {
			return false
		}
		infl := shmring.Word32(e, eInflight)
		add32(infl, 1)
		ok := false
		if shmring.Load64(seq) == s1 {
			switch {
			case mem != nil && write:
				// The peer may poll the last byte and overwrite it
				// at once: it is stored once, last (engine.Place).
				engine.GatherInOrder(mem, wr.SGL)
				ok = true
				l.segOps++
			case mem != nil:
				// The built-in copy, not engine.Copy: see there.
				for i := range wr.SGL {
					mem = mem[copy(wr.SGL[i].Buffer, mem):]
				}
				ok = true
				l.segOps++
			default:
				ok = l.pvmDirect(wr.SGL, base+off, int(n), write) == nil
			}
		}
		add32(infl, -1)
		if shmring.Load64(seq) != s1 {
			futexWakeAll(infl)
		}
		if ok {
			l.directOps++
		}
		return ok
	}
	return false
}

// pvmDirect moves n bytes between the local buffers sgl and the peer's
// memory at remote with process_vm_writev (write) or process_vm_readv.
// Only the caller of Transmit uses the link's iovec scratch space.
func (l *link) pvmDirect(sgl []nd.SGE, remote uint64, n int, write bool) error {
	l.dRemote[0] = remoteIovec{Base: uintptr(remote), Len: n}
	return pvmSGL(l.pid, sgl, 0, n, l.dRemote[:], &l.dIov, write)
}
