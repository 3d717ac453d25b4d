//go:build linux || windows || darwin || freebsd

package shm_test

import (
	"bytes"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/godirect/nd"
	"github.com/godirect/nd/ndtest"
	"github.com/godirect/nd/provider/shm"
)

// TestRendezvousTwoProcesses sends above the default SendThreshold between
// two processes that may read each other's memory: a gathered Send into a
// scattered Receive each way, and a Send longer than its Receive. Every
// large Send goes by rendezvous (the receiving process pulls it).
func TestRendezvousTwoProcesses(t *testing.T) {
	if mode := shm.New(shm.Config{}).OneSidedMode(); strings.HasPrefix(mode, "ring") {
		t.Skip("this process may not copy another's memory:", mode)
	}
	c := startChild(t, "godirect-nd-shm-test-"+t.Name(), shm.Config{})
	rendezvousCases(t, c, true)
}

// TestRendezvousFallback is TestRendezvousTwoProcesses where neither
// process may read the other's memory: the same Sends go through the ring
// and end the same way.
func TestRendezvousFallback(t *testing.T) {
	shm.SetProbeOff(true)
	t.Cleanup(func() { shm.SetProbeOff(false) })
	c := startChild(t, "godirect-nd-shm-test-"+t.Name(), shm.Config{}, true)
	rendezvousCases(t, c, false)
}

func rendezvousCases(t *testing.T, c *child, rv bool) {
	// counted checks that the Sends f makes from this process went by
	// rendezvous (rv) or not, and that those it receives were pulled.
	counted := func(t *testing.T, wantSent, wantPulled uint64, f func()) {
		t.Helper()
		s0, p0 := shm.RendezvousCounts(c.local)
		f()
		s1, p1 := shm.RendezvousCounts(c.local)
		if !rv {
			wantSent, wantPulled = 0, 0
		}
		if s1-s0 != wantSent || p1-p0 != wantPulled {
			t.Errorf("%d Sends went by rendezvous from here and %d were pulled here, want %d and %d", s1-s0, p1-p0, wantSent, wantPulled)
		}
	}
	t.Run("Scatter", func(t *testing.T) {
		pr := ndtest.NewPair(t, c.p, ndtest.PairConfig{})
		// This process (active) to the child, then back.
		counted(t, 1, 0, func() { scatterSend(t, pr.Active, pr.Passive, 1<<20+777) })
		counted(t, 0, 1, func() { scatterSend(t, pr.Passive, pr.Active, 300<<10+5) })
		// Below the threshold: through the ring.
		counted(t, 0, 0, func() { scatterSend(t, pr.Active, pr.Passive, 3000) })
	})
	t.Run("LongerThanReceive", func(t *testing.T) {
		pr := ndtest.NewPair(t, c.p, ndtest.PairConfig{})
		rbuf := make([]byte, 128<<10)
		rmr := pr.Passive.Register(t, rbuf)
		sbuf := make([]byte, 200<<10)
		smr := pr.Active.Register(t, sbuf)
		small, other, sr := new(nd.Result), new(nd.Result), new(nd.Result)
		if err := pr.Passive.Endpoint.Receive(small, []nd.SGE{{Buffer: rbuf, Region: rmr}}); err != nil {
			t.Fatal(err)
		}
		if err := pr.Passive.Endpoint.Receive(other, []nd.SGE{{Buffer: rbuf, Region: rmr}}); err != nil {
			t.Fatal(err)
		}
		counted(t, 1, 0, func() {
			if err := pr.Active.Endpoint.Send(sr, []nd.SGE{{Buffer: sbuf, Region: smr}}, 0); err != nil {
				t.Fatal(err)
			}
			ndtest.Expect(t, pr.Passive.InCQ, small, nd.ErrBufferOverflow, -1)
			ndtest.Expect(t, pr.Active.OutCQ, sr, nd.ErrRemoteError, -1)
		})
		ndtest.Expect(t, pr.Passive.InCQ, other, nd.ErrCanceled, -1)
		ndtest.AwaitDisconnect(t, pr.Active.Connector, "the Send longer than its Receive")
	})
}

// scatterSend sends n bytes from two registrations of side from into a
// Receive of three entries over two registrations of side to, with bytes
// of the Receive's buffers left over around and after them, and checks
// that exactly the message's bytes landed where they belong.
func scatterSend(t *testing.T, from, to *ndtest.Side, n int) {
	t.Helper()
	// The message, gathered from two buffers.
	s1, s2 := make([]byte, n/3), make([]byte, n-n/3)
	for i := range s1 {
		s1[i] = byte(i*7 + 1)
	}
	for i := range s2 {
		s2[i] = byte(i*13 + 5)
	}
	m1, m2 := from.Register(t, s1), from.Register(t, s2)
	want := append(append([]byte(nil), s1...), s2...)
	// The Receive: a[16:16+x], b[32:32+y], a[64+x:] with room to spare.
	x, y := n/4, n/2
	a, b := bytes.Repeat([]byte{0xEE}, 64+x+(n-x-y)+100), bytes.Repeat([]byte{0xDD}, 32+y+48)
	ma, mb := to.Register(t, a), to.Register(t, b)
	sgl := []nd.SGE{
		{Buffer: a[16 : 16+x], Region: ma},
		{Buffer: b[32 : 32+y], Region: mb},
		{Buffer: a[64+x:], Region: ma},
	}
	rr, sr := new(nd.Result), new(nd.Result)
	if err := to.Endpoint.Receive(rr, sgl); err != nil {
		t.Fatal(err)
	}
	if err := from.Endpoint.Send(sr, []nd.SGE{{Buffer: s1, Region: m1}, {Buffer: s2, Region: m2}}, 0); err != nil {
		t.Fatal(err)
	}
	ndtest.Expect(t, from.OutCQ, sr, nd.Success, n)
	ndtest.Expect(t, to.InCQ, rr, nd.Success, n)
	wantA, wantB := bytes.Repeat([]byte{0xEE}, len(a)), bytes.Repeat([]byte{0xDD}, len(b))
	copy(wantA[16:], want[:x])
	copy(wantB[32:], want[x:x+y])
	copy(wantA[64+x:], want[x+y:])
	if !bytes.Equal(a, wantA) || !bytes.Equal(b, wantB) {
		t.Fatalf("the %d-byte message did not land exactly in the Receive's entries", n)
	}
}

// TestRendezvousCloseMidStream: the receiver closes its connection while
// 1 MiB Sends stream in (each pulled by the reader and its helper). Every
// request on both sides completes, and the links' goroutines end.
func TestRendezvousCloseMidStream(t *testing.T) {
	if mode := shm.New(shm.Config{}).OneSidedMode(); strings.HasPrefix(mode, "ring") {
		t.Skip("this process may not copy another's memory:", mode)
	}
	gs := runtime.NumGoroutine()
	t.Run("stream", func(t *testing.T) {
		const n, size = 64, 4 << 20
		p := testProvider(t, shm.Config{})
		l := ndtest.DefaultLimits
		l.InboundEntries, l.OutboundEntries = n, n
		pr := ndtest.NewPair(t, p, ndtest.PairConfig{ActiveLimits: l, PassiveLimits: l, CQEntries: 2 * n})
		sbuf, rbuf := make([]byte, size), make([]byte, size)
		smr, rmr := pr.Active.Register(t, sbuf), pr.Passive.Register(t, rbuf)
		var sends, recvs [n]nd.Result
		for i := range recvs {
			if err := pr.Passive.Endpoint.Receive(&recvs[i], []nd.SGE{{Buffer: rbuf, Region: rmr}}); err != nil {
				t.Fatal(err)
			}
		}
		for i := range sends {
			if err := pr.Active.Endpoint.Send(&sends[i], []nd.SGE{{Buffer: sbuf, Region: smr}}, 0); err != nil {
				t.Fatal(err)
			}
		}
		ndtest.Wait(t, pr.Passive.InCQ) // one arrived; more are being pulled
		if err := pr.Passive.Connector.Close(); err != nil {
			t.Fatal(err)
		}
		statuses := map[nd.Status]int{}
		for _, side := range []struct {
			cq   nd.CompletionQueue
			want int
		}{{pr.Active.OutCQ, n}, {pr.Passive.InCQ, n - 1}} {
			for range side.want {
				r := ndtest.Wait(t, side.cq)
				switch r.Status {
				case nd.Success, nd.ErrCanceled, nd.ErrRemoteError:
					statuses[r.Status]++
				default:
					t.Fatalf("a request completed with %v", r.Status)
				}
			}
		}
		t.Logf("completions: %v", statuses)
	})
	if !shm.SpinUntil(func() bool { return runtime.NumGoroutine() <= gs }) {
		buf := make([]byte, 1<<20)
		t.Fatalf("%d goroutines (before: %d)\n%s", runtime.NumGoroutine(), gs, buf[:runtime.Stack(buf, true)])
	}
}

// TestRendezvousMappedSegments: Sends by rendezvous whose buffers are all
// AllocateMemory memory are copied by the receiver through its mapping of
// the sender's segments (passed with the first one; Sends that overtake
// the segment are pulled with process_vm_readv), byte-exact into a
// scattered Receive; a Send with one Go heap buffer among them is pulled.
func TestRendezvousMappedSegments(t *testing.T) {
	p := testProvider(t, shm.Config{})
	if mode := p.OneSidedMode(); strings.HasPrefix(mode, "ring") {
		t.Skip("this process may not copy another's memory:", mode)
	}
	pr := ndtest.NewPair(t, p, ndtest.PairConfig{})
	const n1, n2 = 40000, 90001
	alloc := func(n int) []byte {
		b, err := shm.AllocateMemory(n)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { shm.FreeMemory(b) })
		return b
	}
	s1, s2, heap := alloc(n1+100), alloc(n2), make([]byte, n2)
	m1, m2, mh := pr.Active.Register(t, s1), pr.Active.Register(t, s2), pr.Active.Register(t, heap)
	r := bytes.Repeat([]byte{0xEE}, 2*(n1+n2))
	mr := pr.Passive.Register(t, r)
	send := func(round int, second []byte, region nd.MemoryRegion) {
		t.Helper()
		for i := range n1 {
			s1[100+i] = byte(i*7 + round)
		}
		for i := range second {
			second[i] = byte(i*13 + round)
		}
		want := append(append([]byte(nil), s1[100:100+n1]...), second...)
		clear(r)
		rr, sr := new(nd.Result), new(nd.Result)
		half := (n1 + n2) / 2
		if err := pr.Passive.Endpoint.Receive(rr, []nd.SGE{{Buffer: r[5 : 5+half], Region: mr}, {Buffer: r[n1+n2:], Region: mr}}); err != nil {
			t.Fatal(err)
		}
		if err := pr.Active.Endpoint.Send(sr, []nd.SGE{{Buffer: s1[100 : 100+n1], Region: m1}, {Buffer: second, Region: region}}, 0); err != nil {
			t.Fatal(err)
		}
		ndtest.Expect(t, pr.Active.OutCQ, sr, nd.Success, n1+n2)
		ndtest.Expect(t, pr.Passive.InCQ, rr, nd.Success, n1+n2)
		got := append(append([]byte(nil), r[5:5+half]...), r[n1+n2:n1+n2+(n1+n2-half)]...)
		if !bytes.Equal(got, want) || r[4] != 0 || r[5+half] != 0 {
			t.Fatalf("round %d: the message did not land exactly", round)
		}
	}
	_, pulled0 := shm.RendezvousCounts(p)
	mapped0 := shm.MappedCount(p)
	round := 0
	deadline := time.Now().Add(10 * time.Second)
	for shm.MappedCount(p) == mapped0 {
		if time.Now().After(deadline) {
			t.Fatal("no Send was copied through the mapping in 10 s")
		}
		round++
		send(round, s2, m2)
		runtime.Gosched()
	}
	for range 5 {
		round++
		send(round, s2, m2)
	}
	_, pulled1 := shm.RendezvousCounts(p)
	if got := shm.MappedCount(p) - mapped0; got < 5 || pulled1-pulled0 != uint64(round) {
		t.Fatalf("%d of %d Sends by rendezvous (%d pulled or copied) went through the mapping, want the last 5 at least", got, round, pulled1-pulled0)
	}
	// The mapped copy allocates nothing.
	if !raceEnabled {
		rr, sr := new(nd.Result), new(nd.Result)
		var out [1]*nd.Result
		wait := func(cq nd.CompletionQueue) {
			for cq.GetResults(out[:]) == 0 {
				runtime.Gosched()
			}
		}
		before := shm.MappedCount(p)
		rsgl := []nd.SGE{{Buffer: r[:n1+n2], Region: mr}}
		ssgl := []nd.SGE{{Buffer: s1[100 : 100+n1], Region: m1}, {Buffer: s2, Region: m2}}
		allocs := testing.AllocsPerRun(20, func() {
			pr.Passive.Endpoint.Receive(rr, rsgl)
			pr.Active.Endpoint.Send(sr, ssgl, 0)
			wait(pr.Active.OutCQ)
			wait(pr.Passive.InCQ)
		})
		if allocs != 0 || shm.MappedCount(p)-before != 21 {
			t.Fatalf("%v allocations per Send copied through the mapping (%d of 21 mapped), want 0", allocs, shm.MappedCount(p)-before)
		}
	}
	// A Go heap buffer in the list: pulled.
	before := shm.MappedCount(p)
	round++
	send(round, heap, mh)
	if shm.MappedCount(p) != before {
		t.Fatal("a Send with a Go heap buffer was copied through a mapping")
	}
}
