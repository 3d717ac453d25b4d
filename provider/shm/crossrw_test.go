//go:build linux || windows || darwin || freebsd

package shm

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/godirect/nd"
	"github.com/godirect/nd/ndtest"
)

// TestRingCrossTraffic: both sides stream ring-mode Reads and Writes at
// each other's windows through the smallest rings allowed, with several
// Reads outstanding, so that both rings fill while each target has Read
// responses queued and a Write arrives behind them. Everything must
// complete (a reader that waited for its own outbound ring would deadlock
// here: each writer waits for the peer's reader), within a bound, and
// every Read must return exactly the bytes of the Write posted just before
// it to the same region, not those of the next one (a Read's response is
// the bytes as of its turn, even when it is sent after later Writes were
// placed).
func TestRingCrossTraffic(t *testing.T) {
	const (
		ringSize = 64 << 10 // the smallest Config.RingSize
		chunk    = 40<<10 + 5
		regions  = 4
		rounds   = 24
		depth    = 24 // requests outstanding per side
		bound    = 20 * time.Second
	)
	p := New(Config{
		Namespace: "godirect-nd-shm-test-" + t.Name(),
		OneSided:  OneSidedRing,
		RingSize:  ringSize,
	})
	if p.cfg.RingSize != ringSize {
		t.Fatalf("RingSize = %d, want %d", p.cfg.RingSize, ringSize)
	}
	c := hookLinks(t, p)
	limits := nd.EndpointLimits{
		InboundEntries: 4, OutboundEntries: 2 * depth,
		InboundSGE: 1, OutboundSGE: 1,
		InboundReadLimit: 8, OutboundReadLimit: 8,
	}
	pr := ndtest.NewPair(t, p, ndtest.PairConfig{
		ActiveLimits: limits, PassiveLimits: limits, CQEntries: 4 * depth,
	})
	a, ps := c.links(t)

	type side struct {
		s    *ndtest.Side
		id   int
		win  []byte
		desc nd.MWDescriptor // this side's window, for the peer
		bufs [depth][]byte
		sgls [depth][]nd.SGE
		res  [depth]nd.Result
	}
	mk := func(s *ndtest.Side, id int) *side {
		x := &side{s: s, id: id, win: make([]byte, regions*chunk)}
		mr := s.Register(t, x.win)
		mw, err := s.Adapter.CreateMemoryWindow(nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { mw.Close() })
		var bind nd.Result
		x.desc, err = s.Endpoint.Bind(&bind, mr, mw, x.win, nd.FlagAllowRead|nd.FlagAllowWrite)
		if err != nil {
			t.Fatal(err)
		}
		ndtest.Expect(t, s.OutCQ, &bind, nd.Success, -1)
		for i := range x.bufs {
			x.bufs[i] = make([]byte, chunk)
			x.sgls[i] = []nd.SGE{{Buffer: x.bufs[i], Region: s.Register(t, x.bufs[i])}}
		}
		return x
	}
	sides := [2]*side{mk(pr.Active, 0), mk(pr.Passive, 1)}

	// fill writes the bytes side id's Write of round r puts in region i.
	fill := func(b []byte, id, r, i int) {
		for j := range b {
			b[j] = byte(j*7 + r*31 + i*13 + id*101)
		}
	}
	// run posts, for every round and region, a Write of fresh bytes and a
	// Read of the same region into the peer's window, keeping up to depth
	// requests outstanding, and checks every Read's bytes.
	run := func(me, peer *side, ctx context.Context) error {
		type op struct {
			read    bool
			r, i    int
			slot    int
			posting int
		}
		var fifo [depth]op
		head, n, slot := 0, 0, 0
		want := make([]byte, chunk)
		var out [8]*nd.Result
		reap := func() error {
			for {
				k := me.s.OutCQ.GetResults(out[:])
				for _, res := range out[:k] {
					o := fifo[head]
					if res != &me.res[o.slot] {
						return fmt.Errorf("side %d: completion out of order", me.id)
					}
					if res.Status != nd.Success || res.BytesTransferred != chunk {
						return fmt.Errorf("side %d: request %d completed with %v, %d bytes", me.id, o.posting, res.Status, res.BytesTransferred)
					}
					if o.read {
						fill(want, me.id, o.r, o.i)
						if string(me.bufs[o.slot]) != string(want) {
							return fmt.Errorf("side %d: the Read of region %d in round %d did not return the bytes of the Write just before it", me.id, o.i, o.r)
						}
					}
					head, n = (head+1)%depth, n-1
				}
				if k > 0 {
					return nil
				}
				if ctx.Err() != nil {
					return fmt.Errorf("side %d: no completion within %v (%d outstanding)", me.id, bound, n)
				}
				wctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
				me.s.OutCQ.Notify(wctx, nd.NotifyAny)
				cancel()
			}
		}
		post := func(o op) error {
			for n == depth {
				if err := reap(); err != nil {
					return err
				}
			}
			o.slot = slot
			slot = (slot + 1) % depth
			var err error
			off := uint64(o.i * chunk)
			if o.read {
				err = me.s.Endpoint.Read(&me.res[o.slot], me.sgls[o.slot], peer.desc, off, 0)
			} else {
				fill(me.bufs[o.slot], me.id, o.r, o.i)
				err = me.s.Endpoint.Write(&me.res[o.slot], me.sgls[o.slot], peer.desc, off, 0)
			}
			if err != nil {
				return fmt.Errorf("side %d: post: %v", me.id, err)
			}
			fifo[(head+n)%depth] = o
			n++
			return nil
		}
		k := 0
		for r := range rounds {
			for i := range regions {
				if err := post(op{r: r, i: i, posting: k}); err != nil {
					return err
				}
				if err := post(op{read: true, r: r, i: i, posting: k + 1}); err != nil {
					return err
				}
				k += 2
			}
		}
		for n > 0 {
			if err := reap(); err != nil {
				return err
			}
		}
		return nil
	}

	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	errs := make(chan error, 2)
	go func() { errs <- run(sides[0], sides[1], ctx) }()
	go func() { errs <- run(sides[1], sides[0], ctx) }()
	for range 2 {
		if err := <-errs; err != nil {
			cancel()
			t.Error(err)
		}
	}
	if t.Failed() {
		return
	}
	// Each window ends with the other side's last round.
	for _, x := range sides {
		want := make([]byte, chunk)
		for i := range regions {
			fill(want, 1-x.id, rounds-1, i)
			if string(x.win[i*chunk:(i+1)*chunk]) != string(want) {
				t.Fatalf("side %d's window region %d does not hold the peer's last Write", x.id, i)
			}
		}
	}
	a.mu.Lock()
	sa := a.snapshots
	a.mu.Unlock()
	ps.mu.Lock()
	sp := ps.snapshots
	ps.mu.Unlock()
	t.Logf("Read responses copied aside before a later Write: %d (active), %d (passive)", sa, sp)
	if sa+sp == 0 {
		t.Fatal("no Read response was copied aside: the test did not reach the path it is for")
	}
}
