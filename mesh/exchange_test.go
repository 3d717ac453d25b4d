package mesh

import (
	"context"
	"encoding/binary"
	"fmt"
	"runtime"
	"sync"
	"time"

	"github.com/godirect/nd"
)

// exchanger is one rank's part of the test exchange: every rank sends m
// bytes to every other and checks every byte it receives. Its Prepare
// registers each peer's buffers and posts the Receive before the
// connection exists.
type exchanger struct {
	rank, m int
	mu      sync.Mutex
	bufs    map[int]*peerBufs
}

type peerBufs struct {
	p          *Peer
	send, recv []byte
	mr         nd.MemoryRegion
	sr, rr     nd.Result
}

func newExchanger(rank, m int) *exchanger {
	return &exchanger{rank: rank, m: m, bufs: make(map[int]*peerBufs)}
}

// pattern is what rank s sends rank d: every byte its own function of
// (s, d, offset).
func pattern(buf []byte, s, d int) {
	for i := range buf {
		var w [8]byte
		binary.LittleEndian.PutUint64(w[:], uint64(s)<<40^uint64(d)<<20^uint64(i/8)*0x9E3779B97F4A7C15)
		buf[i] = w[i%8]
	}
}

func (x *exchanger) prepare(p *Peer) error {
	b := &peerBufs{p: p}
	buf := make([]byte, 2*x.m)
	b.send, b.recv = buf[:x.m], buf[x.m:]
	pattern(b.send, x.rank, p.Rank)
	for i := range b.recv {
		b.recv[i] = 0xEE
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var err error
	if b.mr, err = p.Transport.Adapter.RegisterMemory(ctx, buf); err != nil {
		return err
	}
	if err := p.Endpoint.Receive(&b.rr, []nd.SGE{{Buffer: b.recv, Region: b.mr}}); err != nil {
		return fmt.Errorf("Receive from rank %d: %w", p.Rank, err)
	}
	x.mu.Lock()
	x.bufs[p.Rank] = b
	x.mu.Unlock()
	return nil
}

// run sends to every peer, reaps every completion from the mesh's queues
// and checks the bytes; it returns the number of peers over each
// transport (same host, other host).
func (x *exchanger) run(ctx context.Context, msh *Mesh) (local, remote int, err error) {
	owner := make(map[*nd.Result]string)
	for j, b := range x.bufs {
		if err := b.p.Endpoint.Send(&b.sr, []nd.SGE{{Buffer: b.send, Region: b.mr}}, 0); err != nil {
			return 0, 0, fmt.Errorf("Send to rank %d: %w", j, err)
		}
		owner[&b.sr] = fmt.Sprintf("Send to rank %d", j)
		owner[&b.rr] = fmt.Sprintf("Receive from rank %d", j)
		if b.p.SameHost {
			local++
		} else {
			remote++
		}
	}
	out := make([]*nd.Result, 16)
	for left := 2 * len(x.bufs); left > 0; {
		got := 0
		for _, q := range msh.Queues() {
			n := q.GetResults(out)
			for _, r := range out[:n] {
				what, ok := owner[r]
				if !ok {
					return 0, 0, fmt.Errorf("a completion never posted")
				}
				if r.Status != nd.Success || r.BytesTransferred != x.m {
					return 0, 0, fmt.Errorf("%s: %v, %d bytes; want %d", what, r.Status, r.BytesTransferred, x.m)
				}
				delete(owner, r)
			}
			got += n
		}
		left -= got
		if got == 0 {
			if err := ctx.Err(); err != nil {
				return 0, 0, fmt.Errorf("%d completions missing: %w", left, err)
			}
			runtime.Gosched() // GetResults never blocks
		}
	}
	want := make([]byte, x.m)
	for j, b := range x.bufs {
		pattern(want, j, x.rank)
		for i := range want {
			if b.recv[i] != want[i] {
				return 0, 0, fmt.Errorf("from rank %d, byte %d: %#02x, want %#02x", j, i, b.recv[i], want[i])
			}
		}
	}
	return local, remote, nil
}
