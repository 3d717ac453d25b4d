package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"sync"
	"syscall"
	"time"

	"github.com/godirect/nd/mesh"
)

// goRank is a rank with plain Go sockets: a net.Conn per other rank, a
// goroutine reading each, and the main goroutine writing, as Go programs
// usually serve many peers.
type goRank struct {
	prm    params
	ln     net.Listener
	peers  []*goPeer // by rank; nil at this rank
	events chan goEvent
	quit   chan struct{} // closed by Close: readers stop waiting
	// count counts the readers' events not yet taken: a reader may report
	// the next round's ready, or an exchange's bytes before this rank's
	// go, early.
	count [numKinds]int

	closeOnce sync.Once
	readers   sync.WaitGroup
}

type goPeer struct {
	rank             int
	c                net.Conn
	sendBuf, recvBuf []byte
	ctrl             [ctrlSize]byte // the main goroutine's outgoing control message
	// mayRead hands recvBuf to the reader for the next exchange, once the
	// main goroutine checked the previous one.
	mayRead chan struct{}
}

// goEvent is a reader's report: a control message or an exchange's bytes
// arrived from peer, or err ended the reader.
type goEvent struct {
	peer int
	kind opKind // ctrlRecv or dataRecv
	err  error
}

func newGoRank(prm params, local netip.AddrPort) (*goRank, error) {
	if err := prm.validate(); err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", local.String())
	if err != nil {
		return nil, err
	}
	return &goRank{prm: prm, ln: ln, quit: make(chan struct{}),
		// Every event a run's readers can send fits: they never block on it.
		events: make(chan goEvent, (prm.P-1)*(2*prm.Reps+4))}, nil
}

func (r *goRank) Addr() netip.AddrPort { return r.ln.Addr().(*net.TCPAddr).AddrPort() }

// Close closes the listener and every connection and waits for the
// readers to end.
func (r *goRank) Close() error {
	r.closeOnce.Do(func() {
		close(r.quit)
		r.ln.Close()
		for _, p := range r.peers {
			if p != nil && p.c != nil {
				p.c.Close()
			}
		}
		r.readers.Wait()
	})
	return nil
}

// Run publishes the rank's address in the job's key-value space, reads
// every other rank's, connects and runs the exchanges.
func (r *goRank) Run(ctx context.Context, job mesh.Job) (result, error) {
	if job.Size() != r.prm.P || job.Rank() != r.prm.Rank {
		return result{}, fmt.Errorf("the job says rank %d of %d, the parameters %d of %d", job.Rank(), job.Size(), r.prm.Rank, r.prm.P)
	}
	peers, err := gatherAddrs(ctx, job, r.Addr())
	if err != nil {
		return result{}, err
	}
	times, err := r.run(ctx, peers)
	return result{times: times}, err
}

// gatherAddrs puts this rank's address under "alltoall-go-RANK", fences
// and reads every rank's.
func gatherAddrs(ctx context.Context, job mesh.Job, own netip.AddrPort) ([]netip.AddrPort, error) {
	key := func(i int) string { return fmt.Sprintf("alltoall-go-%d", i) }
	if err := job.Put(ctx, key(job.Rank()), own.String()); err != nil {
		return nil, err
	}
	if err := job.Fence(ctx); err != nil {
		return nil, err
	}
	addrs := make([]netip.AddrPort, job.Size())
	for i := range addrs {
		v, err := job.Get(ctx, key(i))
		if err != nil {
			return nil, err
		}
		if addrs[i], err = netip.ParseAddrPort(v); err != nil {
			return nil, fmt.Errorf("rank %d's address: %w", i, err)
		}
	}
	return addrs, nil
}

func (r *goRank) run(ctx context.Context, peers []netip.AddrPort) ([]time.Duration, error) {
	if len(peers) != r.prm.P {
		return nil, fmt.Errorf("%d addresses for %d ranks", len(peers), r.prm.P)
	}
	if err := r.connect(ctx, peers); err != nil {
		return nil, err
	}
	// Blocked reads and writes end when ctx does.
	stop := context.AfterFunc(ctx, func() {
		for _, p := range r.peers {
			if p != nil {
				p.c.SetDeadline(time.Unix(1, 0))
			}
		}
	})
	defer stop()
	for _, p := range r.peers {
		if p != nil {
			r.readers.Go(func() { r.read(p) })
		}
	}
	times := make([]time.Duration, 0, r.prm.Reps)
	for k := 0; k <= r.prm.Reps; k++ {
		d, err := r.round(ctx, k)
		if err != nil {
			return times, fmt.Errorf("round %d: %w", k, err)
		}
		if k < r.prm.Reps {
			times = append(times, d)
		}
	}
	if r.count != [numKinds]int{} {
		return times, fmt.Errorf("messages beyond the protocol's: %v", r.count)
	}
	// Every rank has read everything meant for it: closing loses nothing.
	r.Close()
	return times, nil
}

// connect dials every rank above (retrying while it does not listen yet)
// and accepts every rank below; a dialing rank's hello names it.
func (r *goRank) connect(ctx context.Context, addrs []netip.AddrPort) error {
	m := r.prm.M
	r.peers = make([]*goPeer, r.prm.P)
	for j := range r.prm.P {
		if j != r.prm.Rank {
			r.peers[j] = &goPeer{rank: j, sendBuf: make([]byte, m), recvBuf: make([]byte, m), mayRead: make(chan struct{}, 1)}
		}
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// The first failure ends the others; it is the one reported.
	var mu sync.Mutex
	var first error
	fail := func(err error) {
		mu.Lock()
		if first == nil {
			first = err
		}
		mu.Unlock()
		cancel()
	}
	stop := context.AfterFunc(ctx, func() { r.ln.Close() })
	defer stop()
	var wg sync.WaitGroup
	wg.Go(func() {
		if err := r.acceptLower(ctx); err != nil {
			fail(fmt.Errorf("accepting: %w", err))
		}
	})
	for j := r.prm.Rank + 1; j < r.prm.P; j++ {
		wg.Go(func() {
			if err := r.dial(ctx, r.peers[j], addrs[j]); err != nil {
				fail(fmt.Errorf("connecting to rank %d at %v: %w", j, addrs[j], err))
			}
		})
	}
	wg.Wait()
	return first
}

func (r *goRank) acceptLower(ctx context.Context) error {
	var hello [ctrlSize]byte
	for range r.prm.Rank {
		c, err := r.ln.Accept()
		if err != nil {
			return fmt.Errorf("accept: %w", err)
		}
		stop := context.AfterFunc(ctx, func() { c.SetDeadline(time.Unix(1, 0)) })
		_, err = io.ReadFull(c, hello[:])
		stop()
		if err != nil {
			c.Close()
			return fmt.Errorf("reading a hello: %w", err)
		}
		j := int(hello[4])<<24 | int(hello[5])<<16 | int(hello[6])<<8 | int(hello[7])
		if j >= r.prm.Rank || r.peers[j].c != nil || checkCtrl(hello[:], helloRound, j) != nil {
			c.Close()
			return fmt.Errorf("a hello %x, not from a rank that should connect here", hello)
		}
		r.peers[j].c = c
	}
	return nil
}

func (r *goRank) dial(ctx context.Context, p *goPeer, addr netip.AddrPort) error {
	d := net.Dialer{LocalAddr: net.TCPAddrFromAddrPort(netip.AddrPortFrom(r.Addr().Addr(), 0))}
	backoff := time.Millisecond
	for {
		c, err := d.DialContext(ctx, "tcp", addr.String())
		if err == nil {
			putCtrl(p.ctrl[:], helloRound, r.prm.Rank)
			if _, err := c.Write(p.ctrl[:]); err != nil {
				c.Close()
				return fmt.Errorf("hello: %w", err)
			}
			p.c = c
			return nil
		}
		if !errors.Is(err, syscall.ECONNREFUSED) {
			return err
		}
		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("refused until the deadline: %w", err)
		case <-t.C:
		}
		backoff = min(2*backoff, 100*time.Millisecond)
	}
}

// read is p's reader: per round, the control message if this connection
// carries one toward this rank (ready on rank 0, go from rank 0), then, when
// the main goroutine hands it the buffer, the exchange's bytes.
func (r *goRank) read(p *goPeer) {
	me := r.prm.Rank
	hasCtrl := me == 0 || p.rank == 0
	var ctrl [ctrlSize]byte
	report := func(kind opKind, err error) bool {
		r.events <- goEvent{peer: p.rank, kind: kind, err: err}
		return err == nil
	}
	for k := 0; k <= r.prm.Reps; k++ {
		if hasCtrl {
			_, err := io.ReadFull(p.c, ctrl[:])
			if err == nil {
				err = checkCtrl(ctrl[:], k, p.rank)
			}
			if !report(ctrlRecv, err) {
				return
			}
		}
		if k == r.prm.Reps {
			return
		}
		select {
		case <-p.mayRead:
		case <-r.quit:
			return
		}
		_, err := io.ReadFull(p.c, p.recvBuf)
		if !report(dataRecv, err) {
			return
		}
	}
}

// wait takes reader events until want of kind arrived, counting every
// event in r.count.
func (r *goRank) wait(ctx context.Context, kind opKind, want int) error {
	count := &r.count
	for count[kind] < want {
		select {
		case ev := <-r.events:
			if ev.err != nil {
				return fmt.Errorf("reading from rank %d: %w", ev.peer, ev.err)
			}
			count[ev.kind]++
		case <-ctx.Done():
			return fmt.Errorf("%v arrived: %w", *count, context.Cause(ctx))
		}
	}
	return nil
}

func (r *goRank) writeCtrl(p *goPeer, round int) error {
	putCtrl(p.ctrl[:], round, r.prm.Rank)
	if _, err := p.c.Write(p.ctrl[:]); err != nil {
		return fmt.Errorf("writing to rank %d: %w", p.rank, err)
	}
	return nil
}

// round runs barrier round k and, for k < Reps, exchange k; it returns the
// exchange's duration.
func (r *goRank) round(ctx context.Context, k int) (time.Duration, error) {
	me, P, exchange := r.prm.Rank, r.prm.P, k < r.prm.Reps
	count := &r.count
	if exchange {
		for _, p := range r.peers {
			if p != nil {
				fillPattern(p.sendBuf, me, p.rank, k, false)
				if r.prm.tamper != nil {
					r.prm.tamper(p.rank, k, p.sendBuf)
				}
				p.mayRead <- struct{}{}
			}
		}
	}
	if me == 0 {
		if err := r.wait(ctx, ctrlRecv, P-1); err != nil {
			return 0, fmt.Errorf("waiting for ready: %w", err)
		}
		count[ctrlRecv] -= P - 1
		for _, p := range r.peers[1:] {
			if err := r.writeCtrl(p, k); err != nil {
				return 0, err
			}
		}
	} else {
		if err := r.writeCtrl(r.peers[0], k); err != nil {
			return 0, err
		}
		if err := r.wait(ctx, ctrlRecv, 1); err != nil {
			return 0, fmt.Errorf("waiting for go: %w", err)
		}
		count[ctrlRecv]--
	}
	if !exchange {
		return 0, nil
	}
	start := time.Now()
	for i := 1; i < P; i++ {
		p := r.peers[(me+i)%P]
		if _, err := p.c.Write(p.sendBuf); err != nil {
			return 0, fmt.Errorf("writing to rank %d: %w", p.rank, err)
		}
	}
	if err := r.wait(ctx, dataRecv, P-1); err != nil {
		return 0, fmt.Errorf("exchange: %w", err)
	}
	took := time.Since(start)
	count[dataRecv] -= P - 1
	for _, p := range r.peers {
		if p != nil {
			if err := checkPattern(p.recvBuf, p.rank, me, k); err != nil {
				return 0, err
			}
		}
	}
	return took, nil
}
