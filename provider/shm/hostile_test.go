package shm

import (
	"context"
	"math/rand/v2"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/godirect/nd"
	"github.com/godirect/nd/internal/shmring"
)

// fakePeer is a hand-made active side: it speaks the setup protocol, then
// does whatever the test wants with its own mapping of the segment.
type fakePeer struct {
	conn  *net.UnixConn
	seg   *segment
	bells [numBells]*shmring.Doorbell
}

func (f *fakePeer) close() {
	f.conn.Close()
	for _, b := range f.bells {
		b.Close()
	}
	f.seg.unmap()
}

// dialFake connects a fake peer to the listener at port and completes the
// setup (request, the passive Accept's reply, ready).
func dialFake(t *testing.T, p *Provider, addr netip.Addr, port uint16) *fakePeer {
	t.Helper()
	tr := p.t
	c, err := net.DialUnix("unixpacket", &net.UnixAddr{Name: tr.connName(addr, 50000+uint16(rand.IntN(10000))), Net: "unixpacket"},
		&net.UnixAddr{Name: tr.listenName(addr, 0, port), Net: "unixpacket"})
	if err != nil {
		t.Fatal(err)
	}
	seg, memfd, err := newSegment(p.cfg.RingSize)
	if err != nil {
		t.Fatal(err)
	}
	f := &fakePeer{conn: c, seg: seg}
	fds := []int{memfd}
	for i := range f.bells {
		if f.bells[i], err = shmring.NewDoorbell(); err != nil {
			t.Fatal(err)
		}
		fds = append(fds, f.bells[i].Fd())
	}
	req := request{ird: 4, ord: 4, ringSize: p.cfg.RingSize}
	l := &link{conn: c, t: tr}
	if err := l.send(req.append(nil), fds); err != nil {
		t.Fatal(err)
	}
	closeAll(fds[:1])
	buf := make([]byte, maxMessage)
	msg, _, err := readMessage(c, buf)
	if err != nil || msg[0] != msgAccept {
		t.Fatalf("no accept: %v", err)
	}
	if err := l.send([]byte{msgReady, 0}, nil); err != nil {
		t.Fatal(err)
	}
	return f
}

// passiveSide listens, accepts one connection and returns its endpoint
// (with Receives posted into the middle of guarded buffers) once accepted.
type passiveSide struct {
	ad    nd.Adapter
	ep    nd.Endpoint
	conn  nd.Connector
	cq    nd.CompletionQueue
	arena []byte
	res   []nd.Result
}

const guard = 512

func listenPassive(t *testing.T, p *Provider) (*passiveSide, nd.Listener, chan error) {
	t.Helper()
	addr := netip.MustParseAddr("127.0.0.1")
	ad, err := p.OpenAdapter(addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ad.Close() })
	ln, err := ad.Listen(4, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	s := &passiveSide{ad: ad, arena: make([]byte, 2*guard+64<<10), res: make([]nd.Result, 8)}
	for i := range s.arena {
		s.arena[i] = 0xA5
	}
	done := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		s.conn, _ = ad.CreateConnector()
		if err := ln.GetConnectionRequest(ctx, s.conn); err != nil {
			done <- err
			return
		}
		s.cq, _ = ad.CreateCompletionQueue(64)
		s.ep, err = s.conn.CreateEndpoint(s.cq, s.cq, nd.EndpointLimits{InboundEntries: 16, OutboundEntries: 16, InboundSGE: 2, OutboundSGE: 2, InboundReadLimit: 4, OutboundReadLimit: 4})
		if err != nil {
			done <- err
			return
		}
		mr, err := ad.RegisterMemory(ctx, s.arena[guard:len(s.arena)-guard])
		if err != nil {
			done <- err
			return
		}
		reg := mr.Bytes()
		for i := range s.res {
			n := len(reg) / len(s.res)
			if err := s.ep.Receive(&s.res[i], []nd.SGE{{Buffer: reg[i*n : (i+1)*n], Region: mr}}); err != nil {
				done <- err
				return
			}
		}
		done <- s.conn.Accept(ctx, s.ep, nil)
	}()
	return s, ln, done
}

// TestHostilePeer: a peer that scribbles random bytes over the shared rings
// and indices and rings every doorbell. The passive side must not panic,
// must not touch memory outside its registrations, and must end the
// connection cleanly: every posted Receive completes.
func TestHostilePeer(t *testing.T) {
	for seed := range uint64(6) {
		t.Run("", func(t *testing.T) {
			p := New(Config{Namespace: "godirect-nd-shm-test-hostile-" + t.Name(), RingSize: 64 << 10})
			s, ln, accepted := listenPassive(t, p)
			f := dialFake(t, p, netip.MustParseAddr("127.0.0.1"), ln.(interface{ Port() uint16 }).Port())
			defer f.close()
			if err := <-accepted; err != nil {
				t.Fatalf("Accept: %v", err)
			}
			rng := rand.New(rand.NewPCG(seed, 99))
			mem := f.seg.mem
			// Some rounds of plausible records first (a Send header with a
			// huge length, sends with a wrong message number), then noise.
			prod, _ := shmring.NewProducer(f.seg.ring(0), f.bells[bellA2PData])
			if seed%2 == 0 {
				if b, _ := prod.Reserve(recSend, auxLast, sendHeader+8); b != nil {
					putU64(b, 1)
					putU32(b[8:], 8)
				}
				if b, _ := prod.Reserve(recWrite, auxByAddress, rdmaHeader+iovSize); b != nil {
					putU64(b, 2)
					putU64(b[8:], addrOf(s.arena))
					putU32(b[20:], 100)
				}
				prod.Publish()
			}
			deadline := time.Now().Add(10 * time.Second)
			ended := func() bool {
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
				defer cancel()
				return s.conn.NotifyDisconnect(ctx) == nil
			}
			for !ended() {
				if time.Now().After(deadline) {
					t.Fatal("the connection did not end")
				}
				for range 64 {
					switch rng.IntN(4) {
					case 0: // an index
						off := []int{0, 128, shmring.Size(p.cfg.RingSize), shmring.Size(p.cfg.RingSize) + 128}[rng.IntN(4)]
						putU64(mem[off:], rng.Uint64()&uint64(rng.IntN(1<<20)))
					default: // anywhere
						off := rng.IntN(len(mem) - 8)
						putU64(mem[off:], rng.Uint64())
					}
				}
				for _, b := range f.bells {
					b.Ring()
				}
			}
			// Every Receive completes (flushed or with an error), nothing
			// outside the registration changed.
			var out [8]*nd.Result
			got := 0
			for got < len(s.res) && time.Now().Before(deadline) {
				got += s.cq.GetResults(out[:])
			}
			if got != len(s.res) {
				t.Fatalf("%d of %d Receives completed", got, len(s.res))
			}
			for i, b := range s.arena {
				if (i < guard || i >= len(s.arena)-guard) && b != 0xA5 {
					t.Fatalf("byte %d outside the registration changed", i)
				}
			}
			s.ep.Close()
			s.conn.Close()
		})
	}
}
