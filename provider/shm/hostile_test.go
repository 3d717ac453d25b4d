package shm

import (
	"context"
	"math/rand/v2"
	"net"
	"net/netip"
	"runtime"
	"testing"
	"time"

	"golang.org/x/sys/unix"

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

// TestHostileTable: the peer (here a fake target) scribbles over the window
// table it publishes, passes a segment of its own, and answers whatever
// reaches its ring. This side's Reads and Writes against it must never
// make this process touch memory outside its own buffers and the peer's
// segment (within the segment's bounds): the initiator only uses the table
// to decide, so a wrong table only hurts the peer that wrote it. A segment
// that is not sealed ends the connection.
func TestHostileTable(t *testing.T) {
	for seed := range uint64(4) {
		t.Run("", func(t *testing.T) {
			p := New(Config{Namespace: "godirect-nd-shm-test-hostile-" + t.Name(), RingSize: 64 << 10})
			c := hookLinks(t, p)
			s, ln, accepted := listenPassive(t, p)
			f := dialFake(t, p, netip.MustParseAddr("127.0.0.1"), ln.(interface{ Port() uint16 }).Port())
			defer f.close()
			if err := <-accepted; err != nil {
				t.Fatalf("Accept: %v", err)
			}
			fmem, err := AllocateMemory(64 << 10)
			if err != nil {
				t.Fatal(err)
			}
			defer FreeMemory(fmem)
			id, size, _, fd, ok := allocationOf(fmem)
			if !ok {
				t.Fatal("allocationOf")
			}
			fl := &link{conn: f.conn, t: p.t}
			if err := fl.sendSegment(id, size, fd); err != nil {
				t.Fatal(err)
			}
			closeAll([]int{fd})
			// This side's buffer, with guard bytes around the registration.
			lb := make([]byte, 2*guard+8192)
			for i := range lb {
				lb[i] = 0x5A
			}
			mr, err := s.ad.RegisterMemory(t.Context(), lb[guard:len(lb)-guard])
			if err != nil {
				t.Fatal(err)
			}
			defer s.ad.DeregisterMemory(t.Context(), mr)
			reg := mr.Bytes()

			rng := rand.New(rand.NewPCG(seed, 7))
			tab := f.seg.table(0) // what the fake active side publishes
			cons, _ := shmring.NewConsumer(f.seg.ring(1), f.bells[bellP2ARoom])
			prod, _ := shmring.NewProducer(f.seg.ring(0), f.bells[bellA2PData])
			bases := []uint64{0, 4096, addrOf(fmem), addrOf(reg), 1<<64 - 4096, 1 << 63}
			lengths := []uint64{0, 4096, 64 << 10, 1 << 40, 1<<64 - 1}
			offs := []uint64{0, 4096, uint64(size) - 100, uint64(size), 1<<64 - 4096, 1 << 62}
			tokens := []uint32{0x1234, 0x5678}
			pick := func(v []uint64) uint64 { return v[rng.IntN(len(v))] }
			var res nd.Result
			out := make([]*nd.Result, 1)
			for round := range 300 {
				// Scribble: plausible entries, or noise.
				for range 8 {
					i := rng.IntN(tableEntries)
					e := tab[i*entrySize : (i+1)*entrySize]
					if rng.IntN(4) == 0 {
						putU64(e[rng.IntN(7)*8:], rng.Uint64())
						continue
					}
					putU64(e[eSeq:], uint64(rng.IntN(3))*2)
					putU32(e[eToken:], tokens[rng.IntN(2)])
					putU32(e[eRights:], uint32(rng.IntN(4)))
					putU64(e[eBase:], pick(bases)+uint64(rng.IntN(3))*512)
					putU64(e[eLength:], pick(lengths))
					putU32(e[eSegment:], []uint32{id, 0, id + 1, rng.Uint32()}[rng.IntN(4)])
					putU64(e[eSegOff:], pick(offs))
				}
				good := rng.IntN(2) == 0
				if good { // one entry that grants the peer's segment
					i := int(tokens[0] % tableEntries)
					e := tab[i*entrySize : (i+1)*entrySize]
					putU64(e[eSeq:], 2)
					putU32(e[eToken:], tokens[0])
					putU32(e[eRights:], rightRead|rightWrite)
					putU64(e[eBase:], addrOf(fmem))
					putU64(e[eLength:], uint64(len(fmem)))
					putU32(e[eSegment:], id)
					putU64(e[eSegOff:], 0)
				}
				n := 1 + rng.IntN(len(reg))
				off := rng.IntN(len(reg) - n + 1)
				sgl := []nd.SGE{{Buffer: reg[off : off+n], Region: mr}}
				desc := nd.MWDescriptor{Token: tokens[rng.IntN(2)], Base: pick(bases), Length: 1 << 20}
				roff := uint64(rng.IntN(8192))
				if good {
					desc.Token, desc.Base = tokens[0], addrOf(fmem)
				}
				if desc.Base+roff < desc.Base {
					roff = 0 // a wrapping request fails locally, ending the test
				}
				if rng.IntN(2) == 0 {
					err = s.ep.Write(&res, sgl, desc, roff, 0)
				} else {
					err = s.ep.Read(&res, sgl, desc, roff, 0)
				}
				if err != nil {
					t.Fatalf("round %d: %v", round, err)
				}
				// Answer what reached the ring (ring mode: this side cannot
				// use process_vm against the fake), until the request is done.
				deadline := time.Now().Add(10 * time.Second)
				for s.cq.GetResults(out) == 0 {
					if time.Now().After(deadline) {
						t.Fatalf("round %d: no completion", round)
					}
					fakeTarget(t, cons, prod)
					runtime.Gosched()
				}
				if out[0] != &res || res.Status != nd.Success {
					t.Fatalf("round %d: completion %v", round, out[0].Status)
				}
				for i, b := range lb {
					if (i < guard || i >= len(lb)-guard) && b != 0x5A {
						t.Fatalf("round %d: byte %d outside the registration changed", round, i)
					}
				}
			}
			// A segment whose size is not sealed ends the connection.
			bad, err := unix.MemfdCreate("bad", unix.MFD_CLOEXEC)
			if err != nil {
				t.Fatal(err)
			}
			unix.Ftruncate(bad, 4096)
			c.mu.Lock()
			l := c.passive
			c.mu.Unlock()
			if l == nil || l.segOps.Load() == 0 {
				t.Error("no request copied through the peer's segment")
			}
			if err := fl.sendSegment(id+1, 4096, bad); err != nil {
				t.Fatal(err)
			}
			unix.Close(bad)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := s.conn.NotifyDisconnect(ctx); err != nil {
				t.Fatalf("an unsealed segment did not end the connection: %v", err)
			}
			s.ep.Close()
			s.conn.Close()
		})
	}
}

// fakeTarget consumes what the real initiator put in its ring and answers
// like a target that grants everything: Read responses of zeros, and an
// Ack for every request.
func fakeTarget(t *testing.T, cons *shmring.Consumer, prod *shmring.Producer) {
	var upTo uint64
	for {
		rec, ok, err := cons.Next()
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			break
		}
		p := rec.Payload
		switch rec.Type {
		case recWrite, recRead:
			msg, length := getU64(p), int(getU32(p[20:]))
			upTo = msg
			if rec.Type == recRead && length > 0 {
				b, _ := prod.Reserve(recReadData, 0, moreHeader+length)
				if b == nil {
					t.Fatal("fake target: ring full")
				}
				putU64(b, msg)
				clear(b[moreHeader:])
			}
		}
		cons.Publish()
	}
	if upTo != 0 {
		b, _ := prod.Reserve(recAck, 0, 8)
		putU64(b, upTo)
		prod.Publish()
	}
}
