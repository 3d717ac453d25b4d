//go:build linux || windows || darwin || freebsd

package shm

import (
	"bytes"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/godirect/nd"
	"github.com/godirect/nd/ndtest"
)

// captureLinks records the links of provider p as the pollers of its
// readiness set look at them, and lets the test stop the consumption of
// p's passive (target) links: while stopped, a poller that comes to look
// at such a ring leaves it alone, so it handles no record at all.
type captureLinks struct {
	mu      sync.Mutex
	active  *link
	passive *link
	stopped atomic.Bool
	parked  atomic.Bool // a poller found the stopped passive link and left it
	resumed atomic.Bool
}

func hookLinks(t *testing.T, p *Provider) *captureLinks {
	c := &captureLinks{}
	h := func(l *link) bool {
		if l.t.p != p {
			return false
		}
		c.mu.Lock()
		if l.active {
			c.active = l
		} else {
			c.passive = l
		}
		c.mu.Unlock()
		if !l.active && c.stopped.Load() && !c.resumed.Load() {
			c.parked.Store(true)
			return true
		}
		return false
	}
	restore := updateSeams(func(s *testSeams) { s.onReader = h })
	t.Cleanup(func() {
		c.resume()
		restore()
	})
	return c
}

// resume lets the pollers consume the passive links again, and makes them
// look at once.
func (c *captureLinks) resume() {
	if c.resumed.Swap(true) {
		return
	}
	c.mu.Lock()
	ps := c.passive
	c.mu.Unlock()
	if ps != nil {
		ps.t.progress.kick(ps)
	}
}

// hold stops the consumption of the passive links and waits until a
// poller found ps stopped: no consumption of ps is under way from then on.
func (c *captureLinks) hold(t *testing.T, ps *link) {
	t.Helper()
	c.stopped.Store(true)
	ps.rxData.Ring()
	if !spinUntil(c.parked.Load) {
		t.Fatal("the receiver's reader did not stop")
	}
}

func (c *captureLinks) links(t *testing.T) (active, passive *link) {
	t.Helper()
	// The links join the readiness set with the connection, but a poller
	// may not have looked at them yet when NewPair returns.
	started := spinUntil(func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		return c.active != nil && c.passive != nil
	})
	if !started {
		t.Fatal("no poller looked at the links")
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.active, c.passive
}

// spinUntil polls f (yielding, no sleep) for at most 10s.
func spinUntil(f func() bool) bool {
	deadline := time.Now().Add(10 * time.Second)
	for !f() {
		if time.Now().After(deadline) {
			return false
		}
		runtime.Gosched()
	}
	return true
}

// windowPair connects a pair over p with a window on the passive side over
// pbuf (Read and Write allowed) and a registered buffer of n bytes on the
// active side.
func windowPair(t *testing.T, p *Provider, pbuf []byte, n int) (*ndtest.Pair, nd.MemoryWindow, nd.MWDescriptor, []byte, nd.MemoryRegion) {
	t.Helper()
	pr := ndtest.NewPair(t, p, ndtest.PairConfig{CQEntries: 256})
	abuf := make([]byte, n)
	amr := pr.Active.Register(t, abuf)
	pmr := pr.Passive.Register(t, pbuf)
	mw, err := pr.Passive.Adapter.CreateMemoryWindow(nil)
	if err != nil {
		t.Fatal(err)
	}
	var bind nd.Result
	desc, err := pr.Passive.Endpoint.Bind(&bind, pmr, mw, pbuf, nd.FlagAllowRead|nd.FlagAllowWrite)
	if err != nil {
		t.Fatal(err)
	}
	ndtest.Expect(t, pr.Passive.OutCQ, &bind, nd.Success, -1)
	return pr, mw, desc, abuf, amr
}

// targetMemory returns n bytes of heap memory or of AllocateMemory.
func targetMemory(t *testing.T, alloc bool, n int) []byte {
	if !alloc {
		return make([]byte, n)
	}
	b, err := AllocateMemory(n)
	if err != nil {
		t.Fatal(err)
	}
	// Registered after this, so deregistered before this runs.
	t.Cleanup(func() {
		if err := FreeMemory(b); err != nil {
			t.Error(err)
		}
	})
	return b
}

var directModes = []struct {
	name  string
	alloc bool
}{{"process_vm", false}, {"AllocateMemory", true}}

// directRig is a connected pair over a provider of its own whose target
// (passive) side has a window over pbuf, and whose initiator can copy into
// it directly: over AllocateMemory, its segment has reached the initiator.
type directRig struct {
	c    *captureLinks
	pr   *ndtest.Pair
	desc nd.MWDescriptor
	pbuf []byte // the target's window
	abuf []byte // the initiator's registered buffer, amr
	amr  nd.MemoryRegion
	a    *link // the initiator's
	ps   *link // the target's
}

// newDirectRig makes a directRig of size bytes over AllocateMemory (alloc)
// or heap memory. It skips the test where heap memory cannot be copied
// directly (process_vm_* is not allowed).
func newDirectRig(t *testing.T, alloc bool, size int) *directRig {
	t.Helper()
	if !alloc && selfProbe() != nil {
		t.Skip("process_vm_readv is not allowed here:", selfProbe())
	}
	p := New(Config{Namespace: "godirect-nd-shm-test-" + t.Name()})
	r := &directRig{c: hookLinks(t, p), pbuf: targetMemory(t, alloc, size)}
	r.pr, _, r.desc, r.abuf, r.amr = windowPair(t, p, r.pbuf, size)
	r.a, r.ps = r.c.links(t)
	if alloc && !spinUntil(func() bool { return len(r.a.segs()) > 0 }) {
		t.Fatal("the target's segment never reached the initiator")
	}
	return r
}

// TestDirectPathWithoutTarget: with the target's reader stopped, the
// initiator's Writes and Reads still complete and move the right bytes,
// and the target handles no record meanwhile: its goroutines are not on
// the one-sided data path.
func TestDirectPathWithoutTarget(t *testing.T) {
	for _, m := range directModes {
		t.Run(m.name, func(t *testing.T) {
			const size = 256 << 10
			r := newDirectRig(t, m.alloc, size)
			c, pr, desc, pbuf, abuf, amr, a, ps := r.c, r.pr, r.desc, r.pbuf, r.abuf, r.amr, r.a, r.ps
			c.stopped.Store(true)
			ps.rxSeen.Store(false)
			d0 := a.directOps
			sgl := []nd.SGE{{Buffer: abuf, Region: amr}}
			var res nd.Result
			for i := range 50 {
				for j := range abuf {
					abuf[j] = byte(i + j*13)
				}
				off := uint64(i * 97)
				sgl[0].Buffer = abuf[:size-off]
				if err := pr.Active.Endpoint.Write(&res, sgl, desc, off, 0); err != nil {
					t.Fatal(err)
				}
				ndtest.Expect(t, pr.Active.OutCQ, &res, nd.Success, int(size-off))
				if !bytes.Equal(pbuf[off:], abuf[:size-off]) {
					t.Fatalf("Write %d did not place the bytes", i)
				}
				for j := range pbuf {
					pbuf[j] = byte(i*7 + j)
				}
				if err := pr.Active.Endpoint.Read(&res, sgl, desc, off, 0); err != nil {
					t.Fatal(err)
				}
				ndtest.Expect(t, pr.Active.OutCQ, &res, nd.Success, int(size-off))
				if !bytes.Equal(abuf[:size-off], pbuf[off:]) {
					t.Fatalf("Read %d did not bring the bytes", i)
				}
			}
			if ps.rxSeen.Load() {
				t.Fatal("the target handled records during the one-sided transfers")
			}
			if n := a.directOps - d0; n != 100 {
				t.Fatalf("%d of 100 Reads and Writes took the direct path", n)
			}
			if m.alloc && a.segOps == 0 {
				t.Fatal("no copy went through the mapped AllocateMemory segment")
			}
			c.resume()
		})
	}
}

// TestInvalidateFencesDirectWrites: the initiator streams Writes, each with
// bytes of its own, into a window while the target invalidates it. Once
// the target reaped the Invalidate's completion, the window's bytes never
// change again: no direct copy lands after the invalidation, and later
// Writes go through the ring, where the target's engine refuses them
// (ND_ACCESS_VIOLATION).
func TestInvalidateFencesDirectWrites(t *testing.T) {
	for _, m := range directModes {
		t.Run(m.name, func(t *testing.T) {
			if !m.alloc && selfProbe() != nil {
				t.Skip("process_vm_readv is not allowed here:", selfProbe())
			}
			for round := range 10 {
				t.Run(fmt.Sprint(round), func(t *testing.T) { invalidateRound(t, m.alloc, false) })
			}
		})
	}
	// Through the rings, a Write larger than the ring arrives in several
	// records, checked against the window at the first: the pieces after
	// it must not land once the window is invalidated either.
	t.Run("ring", func(t *testing.T) {
		for round := range 10 {
			t.Run(fmt.Sprint(round), func(t *testing.T) { invalidateRound(t, false, true) })
		}
	})
}

func invalidateRound(t *testing.T, alloc, ring bool) {
	chunk, chunks := 8<<10, 64
	cfg := Config{Namespace: "godirect-nd-shm-test-" + t.Name()}
	if ring {
		chunk, chunks = 256<<10, 8
		cfg.OneSided, cfg.RingSize = OneSidedRing, 64<<10
	}
	p := New(cfg)
	c := hookLinks(t, p)
	pbuf := targetMemory(t, alloc, chunk)
	pr, mw, desc, src, smr := windowPair(t, p, pbuf, chunk*chunks)
	a, _ := c.links(t)
	for i := range src {
		src[i] = byte(i/chunk + 1)
	}
	var (
		stop      atomic.Bool
		succeeded atomic.Int64
		failed    atomic.Int64
		failSt    atomic.Int64
		wg        sync.WaitGroup
	)
	wg.Add(1)
	go func() {
		defer wg.Done()
		ep, cq := pr.Active.Endpoint, pr.Active.OutCQ
		res := make([]nd.Result, chunks)
		sgl := make([]nd.SGE, 1)
		out := make([]*nd.Result, 1)
		for i := 0; !stop.Load(); i++ {
			k := i % chunks
			sgl[0] = nd.SGE{Buffer: src[k*chunk : (k+1)*chunk], Region: smr}
			if ep.Write(&res[k], sgl, desc, 0, 0) != nil {
				failed.Add(1)
				return
			}
			for cq.GetResults(out) == 0 {
				if stop.Load() {
					return
				}
				runtime.Gosched()
			}
			if out[0].Status != nd.Success {
				failSt.Store(int64(out[0].Status))
				failed.Add(1)
				return
			}
			succeeded.Add(1)
		}
	}()
	defer func() {
		stop.Store(true)
		wg.Wait()
	}()
	if !spinUntil(func() bool { return succeeded.Load() >= 20 || failed.Load() > 0 }) || failed.Load() > 0 {
		t.Fatal("the Writes did not run")
	}
	var inv nd.Result
	if err := pr.Passive.Endpoint.Invalidate(&inv, mw, 0); err != nil {
		t.Fatal(err)
	}
	ndtest.Expect(t, pr.Passive.OutCQ, &inv, nd.Success, -1)
	snap := bytes.Clone(pbuf)
	// The writer keeps posting until a Write fails (the target refuses it
	// and the connection ends).
	if !spinUntil(func() bool { return failed.Load() > 0 }) {
		t.Fatal("no Write failed after the window was invalidated")
	}
	stop.Store(true)
	wg.Wait()
	if st := nd.Status(failSt.Load()); st != nd.ErrAccessViolation {
		t.Errorf("the first Write after the invalidation completed %v, want ND_ACCESS_VIOLATION", st)
	}
	if !bytes.Equal(pbuf, snap) {
		t.Fatal("the window's bytes changed after the Invalidate completed")
	}
	if ring {
		return
	}
	if a.directOps == 0 {
		t.Fatal("no Write took the direct path")
	}
}

// segs lists the peer segments mapped on l.
func (l *link) segs() []uint32 {
	l.segMu.RLock()
	defer l.segMu.RUnlock()
	var ids []uint32
	for id := range l.peerSegs {
		ids = append(ids, id)
	}
	return ids
}

// holdWatchers makes the watcher goroutines of p's links on one side
// (active or passive) stop once they handled the connection's setup
// message (the accept, or the ready), as when the application polls on the
// only processor and the Go scheduler does not run them. They go on when
// the test ends.
func holdWatchers(t *testing.T, p *Provider, active bool) {
	release := make(chan struct{})
	var calls sync.Map // *link -> *atomic.Int32
	h := func(l *link) {
		if l.t.p != p || l.active != active {
			return
		}
		n, _ := calls.LoadOrStore(l, new(atomic.Int32))
		if n.(*atomic.Int32).Add(1) == 2 {
			<-release
		}
	}
	restore := updateSeams(func(s *testSeams) { s.onWatch = h })
	t.Cleanup(func() {
		close(release)
		restore()
	})
}

// TestSegmentPulledByInitiator: with the initiator's watcher held, the
// message that passes the target's AllocateMemory segment waits on the
// socket. The first Write into a window in that segment takes the message
// itself and copies through the mapping, rather than through process_vm
// or the ring.
func TestSegmentPulledByInitiator(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("on Windows the pipe has one reader, the watcher: a held watcher leaves the segment unmapped (pullSegments is Linux's)")
	}
	p := New(Config{Namespace: "godirect-nd-shm-test-" + t.Name()})
	c := hookLinks(t, p)
	holdWatchers(t, p, true)
	const size = 64 << 10
	pbuf := targetMemory(t, true, size)
	pr, _, desc, abuf, amr := windowPair(t, p, pbuf, size)
	a, _ := c.links(t)
	if len(a.segs()) != 0 {
		t.Fatal("the watcher mapped the segment while it was held")
	}
	for i := range abuf {
		abuf[i] = byte(i*7 + 3)
	}
	var res nd.Result
	if err := pr.Active.Endpoint.Write(&res, []nd.SGE{{Buffer: abuf, Region: amr}}, desc, 0, 0); err != nil {
		t.Fatal(err)
	}
	ndtest.Expect(t, pr.Active.OutCQ, &res, nd.Success, size)
	if !bytes.Equal(pbuf, abuf) {
		t.Fatal("the Write did not place the bytes")
	}
	if n := a.segOps; n != 1 {
		t.Fatalf("%d copies went through the mapped segment, want 1", n)
	}
	if got := a.segs(); len(got) != 1 {
		t.Fatalf("mapped segments %v, want one", got)
	}
}

// TestSegmentPulledByReceiver: with the receiver's watcher held, the first
// Send by rendezvous from an AllocateMemory buffer is copied through the
// mapping of the sender's segment, which the receiver took from the
// socket itself.
func TestSegmentPulledByReceiver(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("on Windows the pipe has one reader, the watcher: a held watcher leaves the segment unmapped (pullSegments is Linux's)")
	}
	p := New(Config{Namespace: "godirect-nd-shm-test-" + t.Name(), SendThreshold: 1024})
	if selfProbe() != nil {
		t.Skip("process_vm_readv is not allowed here:", selfProbe())
	}
	holdWatchers(t, p, false)
	pr := ndtest.NewPair(t, p, ndtest.PairConfig{})
	const size = 40000
	src := targetMemory(t, true, size)
	for i := range src {
		src[i] = byte(i*13 + 1)
	}
	dst := make([]byte, size)
	smr, dmr := pr.Active.Register(t, src), pr.Passive.Register(t, dst)
	var rr, sr nd.Result
	if err := pr.Passive.Endpoint.Receive(&rr, []nd.SGE{{Buffer: dst, Region: dmr}}); err != nil {
		t.Fatal(err)
	}
	if err := pr.Active.Endpoint.Send(&sr, []nd.SGE{{Buffer: src, Region: smr}}, 0); err != nil {
		t.Fatal(err)
	}
	ndtest.Expect(t, pr.Active.OutCQ, &sr, nd.Success, size)
	ndtest.Expect(t, pr.Passive.InCQ, &rr, nd.Success, size)
	if !bytes.Equal(dst, src) {
		t.Fatal("the Send did not land exactly")
	}
	if n := p.t.rvMapped.Load(); n != 1 {
		t.Fatalf("%d Sends went through the mapping, want 1", n)
	}
}

// TestInvalidateFencesReads: the initiator streams Reads of a window while
// the target invalidates it and then overwrites the window's bytes. No
// Read that completes with success carries a byte written after the
// Invalidate's completion was reaped, and the Read cut by the invalidation
// fails with ND_ACCESS_VIOLATION. "ring": a response larger than the ring
// leaves in several records after the Read was accepted, each read from
// the window and checked in one step (without that, 1 or 2 Reads a round
// carried overwritten bytes). "process_vm": Reads copied directly by the
// initiator, or by address by the target when earlier Reads are
// unacknowledged; the latter's window (check, then copy) is too short for
// this test to hit, so AccessWith's hold is covered by construction.
func TestInvalidateFencesReads(t *testing.T) {
	t.Run("ring", func(t *testing.T) {
		for round := range 10 {
			t.Run(fmt.Sprint(round), func(t *testing.T) { invalidateReadRound(t, true) })
		}
	})
	t.Run("process_vm", func(t *testing.T) {
		if selfProbe() != nil {
			t.Skip("process_vm_readv is not allowed here:", selfProbe())
		}
		for round := range 10 {
			t.Run(fmt.Sprint(round), func(t *testing.T) { invalidateReadRound(t, false) })
		}
	})
}

func invalidateReadRound(t *testing.T, ring bool) {
	const written = 0xee // the window's bytes once the Invalidate completed
	chunk, chunks, depth := 8<<10, 64, 8
	cfg := Config{Namespace: "godirect-nd-shm-test-" + t.Name()}
	if ring {
		chunk, chunks, depth = 256<<10, 8, 2
		cfg.OneSided, cfg.RingSize = OneSidedRing, 64<<10
	}
	p := New(cfg)
	pbuf := make([]byte, chunk*chunks)
	for i := range pbuf {
		pbuf[i] = byte(i/chunk + 1)
	}
	pr, mw, desc, dst, dmr := windowPair(t, p, pbuf, chunk*chunks)
	var (
		stop      atomic.Bool
		succeeded atomic.Int64
		failSt    atomic.Int64
		bad       atomic.Int64 // a successful Read that carried a byte written after the invalidation
		wg        sync.WaitGroup
	)
	failSt.Store(-1)
	wg.Add(1)
	go func() {
		defer wg.Done()
		ep, cq := pr.Active.Endpoint, pr.Active.OutCQ
		res := make([]nd.Result, chunks)
		sgls := make([][]nd.SGE, chunks)
		out := make([]*nd.Result, 1)
		post := func(k int) bool {
			sgls[k] = []nd.SGE{{Buffer: dst[k*chunk : (k+1)*chunk], Region: dmr}}
			return ep.Read(&res[k], sgls[k], desc, uint64(k*chunk), 0) == nil
		}
		for k := range depth { // several Reads outstanding: some go through the ring by address
			if !post(k) {
				failSt.Store(0)
				return
			}
		}
		for {
			for cq.GetResults(out) == 0 {
				runtime.Gosched()
			}
			k := 0
			for &res[k] != out[0] {
				k++
			}
			if out[0].Status != nd.Success {
				failSt.CompareAndSwap(-1, int64(out[0].Status))
				return
			}
			if bytes.IndexByte(dst[k*chunk:(k+1)*chunk], written) >= 0 {
				bad.Add(1)
			}
			succeeded.Add(1)
			if stop.Load() || !post(k) {
				return
			}
		}
	}()
	defer func() {
		stop.Store(true)
		wg.Wait()
	}()
	if !spinUntil(func() bool { return succeeded.Load() >= 20 || failSt.Load() != -1 }) || failSt.Load() != -1 {
		t.Fatal("the Reads did not run")
	}
	var inv nd.Result
	if err := pr.Passive.Endpoint.Invalidate(&inv, mw, 0); err != nil {
		t.Fatal(err)
	}
	ndtest.Expect(t, pr.Passive.OutCQ, &inv, nd.Success, -1)
	for i := range pbuf {
		pbuf[i] = written
	}
	if !spinUntil(func() bool { return failSt.Load() != -1 }) {
		t.Fatal("no Read failed after the window was invalidated")
	}
	stop.Store(true)
	wg.Wait()
	if st := nd.Status(failSt.Load()); st != nd.ErrAccessViolation {
		t.Errorf("the first Read that failed completed %v, want ND_ACCESS_VIOLATION", st)
	}
	if n := bad.Load(); n > 0 {
		t.Fatalf("%d Reads completed with bytes written to the window after its invalidation", n)
	}
}

// TestDirectWritesWaitForTheRing: a Write that could be copied directly
// does not overtake a request of the same connection still in the ring
// (here a Send the target has not handled, its reader stopped), even right
// after direct copies, which found the connection quiet: it goes through
// the ring behind the Send, and its bytes land only once the target
// handles both.
func TestDirectWritesWaitForTheRing(t *testing.T) {
	for _, m := range directModes {
		t.Run(m.name, func(t *testing.T) {
			const size = 4096
			r := newDirectRig(t, m.alloc, size)
			c, pr, desc, pbuf, abuf, amr, a, ps := r.c, r.pr, r.desc, r.pbuf, r.abuf, r.amr, r.a, r.ps
			ep, cq := pr.Active.Endpoint, pr.Active.OutCQ
			sgl := []nd.SGE{{Buffer: abuf, Region: amr}}
			var write, send, recv nd.Result
			for i := range 3 { // direct copies: the connection is quiet
				for j := range abuf {
					abuf[j] = byte(i + 1)
				}
				if err := ep.Write(&write, sgl, desc, 0, 0); err != nil {
					t.Fatal(err)
				}
				ndtest.Expect(t, cq, &write, nd.Success, size)
			}
			if !bytes.Equal(pbuf, abuf) {
				t.Fatal("the direct Writes did not place their bytes")
			}
			rbuf := make([]byte, 16)
			if err := pr.Passive.Endpoint.Receive(&recv, []nd.SGE{{Buffer: rbuf, Region: pr.Passive.Register(t, rbuf)}}); err != nil {
				t.Fatal(err)
			}
			c.hold(t, ps)
			d0 := a.directOps
			if err := ep.Send(&send, []nd.SGE{{Buffer: []byte("first")}}, 0); err != nil {
				t.Fatal(err)
			}
			for j := range abuf {
				abuf[j] = 0xEE
			}
			if err := ep.Write(&write, sgl, desc, 0, 0); err != nil {
				t.Fatal(err)
			}
			if n := a.directOps - d0; n != 0 || pbuf[0] != 3 || pbuf[size-1] != 3 {
				t.Fatalf("the Write after an unhandled Send was copied directly (%d direct copies; target bytes %#x..%#x, want 0x3)", n, pbuf[0], pbuf[size-1])
			}
			c.resume()
			ndtest.Expect(t, cq, &send, nd.Success, 5)
			ndtest.Expect(t, cq, &write, nd.Success, size)
			ndtest.Expect(t, pr.Passive.InCQ, &recv, nd.Success, 5)
			if string(rbuf[:5]) != "first" || !bytes.Equal(pbuf, abuf) {
				t.Fatalf("received %q, target bytes %#x..%#x: want \"first\" and 0xee", rbuf[:5], pbuf[0], pbuf[size-1])
			}
		})
	}
}

// TestDirectCopiesEndBeforeTeardown: the initiator's endpoint closes while
// its own goroutine keeps copying Writes straight into the target's
// AllocateMemory segment. The teardown unmaps that segment only once the
// copy under way ended (under -race, it also checks that the teardown and
// the copies are ordered): every Write either completed with its bytes
// or was refused because the endpoint closed.
func TestDirectCopiesEndBeforeTeardown(t *testing.T) {
	for round := range 20 {
		t.Run(fmt.Sprint(round), func(t *testing.T) {
			r := newDirectRig(t, true, 64<<10)
			pr, desc, abuf, amr, a := r.pr, r.desc, r.abuf, r.amr, r.a
			ep, cq := pr.Active.Endpoint, pr.Active.OutCQ
			var (
				wrote atomic.Int64
				done  = make(chan error, 1)
			)
			go func() {
				sgl := []nd.SGE{{Buffer: abuf, Region: amr}}
				out := make([]*nd.Result, 1)
				var res nd.Result
				for {
					err := ep.Write(&res, sgl, desc, 0, 0)
					if err != nil {
						done <- err
						return
					}
					for cq.GetResults(out) == 0 {
						runtime.Gosched()
					}
					if res.Status != nd.Success {
						done <- res.Status
						return
					}
					wrote.Add(1)
				}
			}()
			if !spinUntil(func() bool { return wrote.Load() >= 10 }) {
				t.Fatal("no Write completed")
			}
			if err := ep.Close(); err != nil {
				t.Fatal(err)
			}
			err := <-done
			if err != nd.ErrInvalidHandle && err != nd.ErrCanceled {
				t.Fatalf("after %d Writes and Close: %v, want ND_INVALID_HANDLE (the post after Close) or ND_CANCELED (a Write Close flushed)", wrote.Load(), err)
			}
			if a.directOps < uint64(wrote.Load()) {
				t.Fatalf("%d Writes completed, %d direct copies", wrote.Load(), a.directOps)
			}
		})
	}
}
