//go:build linux || windows || darwin || freebsd

package shm

import (
	"bytes"
	"context"
	"math/rand/v2"
	"net/netip"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/godirect/nd"
	"github.com/godirect/nd/internal/shmring"
	"github.com/godirect/nd/ndtest"
)

// fakePeer is a hand-made active side: it speaks the setup protocol, then
// does whatever the test wants with its own mapping of the segment.
type fakePeer struct {
	conn  *setupConn
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
	f, _ := dialFakeProbe(t, p, addr, port, false)
	return f
}

// dialFakeProbe is dialFake; withProbe, the request names this process's
// real probe bytes, so that the passive side's probe of the fake (this
// process) succeeds. It returns the capabilities the passive side
// announced.
func dialFakeProbe(t *testing.T, p *Provider, addr netip.Addr, port uint16, withProbe bool) (*fakePeer, byte) {
	t.Helper()
	tr := p.t
	local := netip.AddrPortFrom(addr, 50000+uint16(rand.IntN(10000)))
	c := fakeConnect(t, tr, local, port)
	seg, memfd, err := newSegment(p.cfg.RingSize)
	if err != nil {
		t.Fatal(err)
	}
	f := &fakePeer{conn: c, seg: seg}
	fds := []osHandle{memfd}
	for i := range f.bells {
		if f.bells[i], err = shmring.NewDoorbell(); err != nil {
			t.Fatal(err)
		}
		fds = appendBellHandle(fds, f.bells[i])
	}
	req := request{ird: 4, ord: 4, ringSize: p.cfg.RingSize}
	if withProbe {
		req.probeAddr, req.probe = probeAddr(), *probe
	}
	l := &link{}
	l.conn, l.t = c, tr
	if err := l.send(fakeRequestBody(&req, local), fds); err != nil {
		t.Fatal(err)
	}
	releaseSegmentHandle(memfd)
	buf := make([]byte, maxMessage+maxTrailer)
	msg, _, err := readMessage(c, buf, nil)
	if err != nil || msg[0] != msgAccept {
		t.Fatalf("no accept: %v", err)
	}
	r, err := parseReply(msg)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.send([]byte{msgReady, 0}, nil); err != nil {
		t.Fatal(err)
	}
	return f, r.caps
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
			deadline := time.Now().Add(hostileEnd)
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
			id, size, _, fd, ok := allocationOf(fmem, true)
			if !ok {
				t.Fatal("allocationOf")
			}
			fl := &link{}
			fl.conn, fl.t = f.conn, p.t
			if err := fl.sendSegment(id, size, fd); err != nil {
				t.Fatal(err)
			}
			closeShared(fd)
			if runtime.GOOS == "windows" {
				// The watcher alone maps it there (pullSegments is
				// Linux's): let it before the copies that should use it.
				// (The passive link is known once its hook ran, which may
				// be after Accept returned.)
				mapped := func() bool {
					c.mu.Lock()
					l := c.passive
					c.mu.Unlock()
					return l != nil && len(l.segs()) > 0
				}
				if !spinUntil(mapped) {
					t.Fatal("the fake's segment was never mapped")
				}
			}
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
			// A segment that is not one (Linux: its size is not sealed;
			// Windows: not a section) ends the connection.
			bad, release := badSegment(t)
			c.mu.Lock()
			l := c.passive
			c.mu.Unlock()
			if l == nil || l.segOps == 0 {
				t.Error("no request copied through the peer's segment")
			}
			if err := fl.sendSegment(id+1, 4096, bad); err != nil {
				t.Fatal(err)
			}
			ndtest.AwaitDisconnect(t, s.conn, "a bad segment")
			release()
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

// TestHostileRendezvous: a fake peer (in this process, so that the passive
// side's probe of it succeeds and it announces capSend) sends rendezvous
// records, well-formed, forged and malformed. The passive side must place
// a good one exactly, answer a forged address or a Send longer than its
// Receive with a term record (ND_REMOTE_ERROR) and end the connection, end
// it on any malformed record, never panic, and never write outside the
// first Receive's buffer (nor into it, unless it pulled real bytes).
func TestHostileRendezvous(t *testing.T) {
	src := make([]byte, 16<<10)
	for i := range src {
		src[i] = byte(i*5 + 3)
	}
	type iov struct{ addr, n uint64 }
	at := func(off, n int) iov { return iov{addrOf(src[off:]), uint64(n)} }
	const recvSize = (64 << 10) / 8 // listenPassive's Receives
	cases := []struct {
		name  string
		probe bool   // the fake's probe can be read (the passive side announces capSend)
		typ   uint16 // a record sent before (0: none)
		msg   uint64
		total uint32
		iovs  []iov
		raw   []byte    // the payload instead, if not nil
		recv  nd.Status // the first Receive's status; Success: the connection stays
		term  bool      // a term record (ND_REMOTE_ERROR, msg 1) comes back
		n     int       // bytes placed at the start of the first Receive
		seg   bool      // a sendRVSeg naming segment 7 at offset 1<<62 in every entry
	}{
		{name: "Valid", probe: true, msg: 1, total: 5000, iovs: []iov{at(0, 3000), at(8000, 2000)}, recv: nd.Success, n: 5000},
		{name: "ExactFit", probe: true, msg: 1, total: recvSize, iovs: []iov{at(100, recvSize)}, recv: nd.Success, n: recvSize},
		{name: "ForgedAddress", probe: true, msg: 1, total: 4096, iovs: []iov{{0x1000, 4096}}, recv: nd.ErrCanceled, term: true},
		{name: "PartlyForged", probe: true, msg: 1, total: 8192, iovs: []iov{at(0, 4096), {1 << 46, 4096}}, recv: nd.ErrCanceled, term: true, n: -1},
		{name: "LongerThanReceive", probe: true, msg: 1, total: recvSize + 1, iovs: []iov{at(0, recvSize+1)}, recv: nd.ErrBufferOverflow, term: true},
		{name: "Truncated", probe: true, raw: []byte{1, 0, 0, 0, 0, 0, 0, 0, 16, 0, 0, 0}, recv: nd.ErrCanceled},
		{name: "RaggedList", probe: true, msg: 1, total: 16, iovs: []iov{at(0, 16)}, raw: []byte{8}, recv: nd.ErrCanceled},
		{name: "LengthsDisagree", probe: true, msg: 1, total: 4096, iovs: []iov{at(0, 4000)}, recv: nd.ErrCanceled},
		{name: "ZeroTotal", probe: true, msg: 1, total: 0, recv: nd.ErrCanceled},
		{name: "TooManyEntries", probe: true, msg: 1, total: maxIovs + 1, iovs: func() []iov {
			v := make([]iov, maxIovs+1)
			for i := range v {
				v[i] = at(i, 1)
			}
			return v
		}(), recv: nd.ErrCanceled},
		{name: "WrappingEntry", probe: true, msg: 1, total: 200, iovs: []iov{{1<<64 - 100, 200}}, recv: nd.ErrCanceled},
		{name: "HugeEntry", probe: true, msg: 1, total: 1<<31 + 1, iovs: []iov{at(0, 1<<31+1)}, recv: nd.ErrCanceled},
		{name: "WrongMessage", probe: true, msg: 2, total: 16, iovs: []iov{at(0, 16)}, recv: nd.ErrCanceled},
		{name: "InsideRingSend", probe: true, typ: recSend, msg: 2, total: 16, iovs: []iov{at(0, 16)}, recv: nd.ErrCanceled},
		{name: "NotAnnounced", probe: false, msg: 1, total: 16, iovs: []iov{at(0, 16)}, recv: nd.ErrCanceled},
		// Segments this side never mapped: the addresses are used.
		{name: "SegValid", probe: true, seg: true, msg: 1, total: 5000, iovs: []iov{at(0, 3000), at(8000, 2000)}, recv: nd.Success, n: 5000},
		{name: "SegForgedAddress", probe: true, seg: true, msg: 1, total: 4096, iovs: []iov{{0x1000, 4096}}, recv: nd.ErrCanceled, term: true},
		{name: "SegRaggedList", probe: true, seg: true, msg: 1, total: 16, iovs: []iov{at(0, 16)}, raw: []byte{8}, recv: nd.ErrCanceled},
		{name: "SegLengthsDisagree", probe: true, seg: true, msg: 1, total: 4096, iovs: []iov{at(0, 4000)}, recv: nd.ErrCanceled},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.probe && selfProbe() != nil {
				t.Skip("process_vm_readv is not allowed here:", selfProbe())
			}
			p := New(Config{Namespace: "godirect-nd-shm-test-hostile-" + t.Name(), RingSize: 64 << 10})
			s, ln, accepted := listenPassive(t, p)
			f, caps := dialFakeProbe(t, p, netip.MustParseAddr("127.0.0.1"), ln.(interface{ Port() uint16 }).Port(), c.probe)
			defer f.close()
			if err := <-accepted; err != nil {
				t.Fatalf("Accept: %v", err)
			}
			if got := caps&capSend != 0; got != c.probe {
				t.Fatalf("the passive side announced capSend %v, want %v", got, c.probe)
			}
			prod, _ := shmring.NewProducer(f.seg.ring(0), f.bells[bellA2PData])
			cons, _ := shmring.NewConsumer(f.seg.ring(1), f.bells[bellP2ARoom])
			if c.typ == recSend { // the first fragment of a ring Send
				b, _ := prod.Reserve(recSend, 0, sendHeader+100)
				putU64(b, 1)
				putU32(b[8:], 4000)
				for i := range b[sendHeader:] {
					b[sendHeader+i] = 0x77
				}
			}
			payload := c.raw
			if payload == nil || c.iovs != nil {
				payload = appendU32(appendU32(appendU64(nil, c.msg), c.total), 0)
				for _, v := range c.iovs {
					payload = appendU64(appendU64(payload, v.addr), v.n)
					if c.seg {
						payload = appendU64(appendU32(appendU32(payload, 7), 0), 1<<62)
					}
				}
				payload = append(payload, c.raw...)
			}
			typ := uint16(recSendRV)
			if c.seg {
				typ = recSendRVSeg
			}
			b, err := prod.Reserve(typ, 0, len(payload))
			if b == nil {
				t.Fatalf("Reserve: %v", err)
			}
			copy(b, payload)
			prod.Publish()

			var out [8]*nd.Result
			first := ndtest.Wait(t, s.cq)
			if first != &s.res[0] || first.Status != c.recv {
				t.Fatalf("first completion: %p %v, want the first Receive %p with %v", first, first.Status, &s.res[0], c.recv)
			}
			if c.recv == nd.Success && first.BytesTransferred != c.n {
				t.Fatalf("the Receive got %d bytes, want %d", first.BytesTransferred, c.n)
			}
			if c.recv == nd.Success {
				// Acknowledged, and the connection lives on.
				if !spinUntil(func() bool {
					rec, ok, err := cons.Next()
					if err != nil {
						t.Fatal(err)
					}
					return ok && rec.Type == recAck && getU64(rec.Payload) == 1
				}) {
					t.Fatal("no ack for the rendezvous Send")
				}
			} else {
				ndtest.AwaitDisconnect(t, s.conn, "the refused rendezvous Send")
				got := 1
				deadline := time.Now().Add(10 * time.Second)
				for got < len(s.res) && time.Now().Before(deadline) {
					n := s.cq.GetResults(out[:])
					for _, r := range out[:n] {
						if r.Status != nd.ErrCanceled {
							t.Errorf("a later Receive completed with %v, want ND_CANCELED", r.Status)
						}
					}
					got += n
				}
				if got != len(s.res) {
					t.Fatalf("%d of %d Receives completed", got, len(s.res))
				}
				termed := false
				for {
					rec, ok, err := cons.Next()
					if err != nil || !ok {
						break
					}
					if rec.Type == recTerm {
						termed = getU64(rec.Payload) == 1 && nd.Status(getU32(rec.Payload[8:])) == nd.ErrRemoteError
					}
				}
				if termed != c.term {
					t.Errorf("a term record for message 1 with ND_REMOTE_ERROR came back: %v, want %v", termed, c.term)
				}
			}
			// Nothing outside the first Receive changed; inside it, exactly
			// the bytes pulled (or, for a partial pull, only the source's).
			recv := s.arena[guard : guard+recvSize]
			for i, v := range s.arena {
				if i >= guard && i < guard+recvSize {
					continue
				}
				if v != 0xA5 {
					t.Fatalf("byte %d outside the first Receive changed", i)
				}
			}
			want := bytes.Repeat([]byte{0xA5}, recvSize)
			if c.typ == recSend {
				copy(want, bytes.Repeat([]byte{0x77}, 100))
			}
			switch {
			case c.n > 0:
				off := 0
				for _, v := range c.iovs {
					copy(want[off:], unsafeBytes(t, src, v.addr, int(v.n)))
					off += int(v.n)
				}
			case c.n < 0: // the valid part may or may not have landed
				if !bytes.Equal(recv[:4096], src[:4096]) {
					copy(want, recv[:4096])
				} else {
					copy(want, src[:4096])
				}
			}
			if !bytes.Equal(recv, want) {
				t.Fatal("the first Receive's bytes are not the ones pulled")
			}
			s.ep.Close()
			s.conn.Close()
		})
	}
}

// unsafeBytes returns the n bytes of src at address addr (which lie in it).
func unsafeBytes(t *testing.T, src []byte, addr uint64, n int) []byte {
	off := addr - addrOf(src)
	if off > uint64(len(src)) || uint64(n) > uint64(len(src))-off {
		t.Fatalf("address %#x is not in the source", addr)
	}
	return src[off : off+uint64(n)]
}

// TestRendezvousSenderUnmapped: the sender's buffer is gone by the time the
// receiver pulls (deregistered and unmapped while the Send was in flight,
// the receiver's reader held back meanwhile). The pull fails with EFAULT:
// the Send completes with ND_REMOTE_ERROR, the Receive with ND_CANCELED,
// and the connection ends. Memory from AllocateMemory that the receiver
// mapped is different: its mapping keeps the segment, so FreeMemory on the
// sender's side does not take the bytes away, and the Send lands.
func TestRendezvousSenderUnmapped(t *testing.T) {
	t.Run("Mmap", func(t *testing.T) { rendezvousSenderUnmapped(t, false) })
	t.Run("AllocateMemory", func(t *testing.T) { rendezvousSenderUnmapped(t, true) })
}

func rendezvousSenderUnmapped(t *testing.T, shared bool) {
	if selfProbe() != nil {
		t.Skip("process_vm_readv is not allowed here:", selfProbe())
	}
	if !shared && ndtest.UnderWine() {
		// Measured with Wine 8: ReadProcessMemory of its own process
		// copies from memory VirtualFree released, without an error.
		t.Skip("Wine's ReadProcessMemory reads released memory of its own process")
	}
	p := New(Config{Namespace: "godirect-nd-shm-test-" + strings.ReplaceAll(t.Name(), "/", "-")})
	c := hookLinks(t, p)
	pr := ndtest.NewPair(t, p, ndtest.PairConfig{})
	_, ps := c.links(t)
	const size = 256 << 10
	var mem []byte
	var unmap func() error
	var err error
	if shared {
		mem, err = AllocateMemory(size)
	} else {
		mem, unmap = mapPrivate(t, size)
	}
	if err != nil {
		t.Fatal(err)
	}
	for i := range mem {
		mem[i] = byte(i*3 + 1)
	}
	want := bytes.Clone(mem)
	mr, err := pr.Active.Adapter.RegisterMemory(t.Context(), mem)
	if err != nil {
		t.Fatal(err)
	}
	rbuf := bytes.Repeat([]byte{0xA5}, size)
	rmr := pr.Passive.Register(t, rbuf)
	rr, other, sr := new(nd.Result), new(nd.Result), new(nd.Result)
	for _, r := range []*nd.Result{rr, other} {
		if err := pr.Passive.Endpoint.Receive(r, []nd.SGE{{Buffer: rbuf, Region: rmr}}); err != nil {
			t.Fatal(err)
		}
	}
	// Hold the receiver's reader at its hook before it looks at the ring.
	c.hold(t, ps)
	sent0, _ := RendezvousCounts(p)
	if err := pr.Active.Endpoint.Send(sr, []nd.SGE{{Buffer: mem, Region: mr}}, 0); err != nil {
		t.Fatal(err)
	}
	if !spinUntil(func() bool { s, _ := RendezvousCounts(p); return s > sent0 }) {
		t.Fatal("the Send did not go by rendezvous")
	}
	if shared {
		id, _, _, _, _ := allocationOf(mem, false)
		if !spinUntil(func() bool { return ps.peerSegment(id) != nil }) {
			t.Fatal("the receiver did not map the sender's segment")
		}
	}
	if err := pr.Active.Adapter.DeregisterMemory(t.Context(), mr); err != nil {
		t.Fatal(err)
	}
	if shared {
		err = FreeMemory(mem)
	} else {
		err = unmap()
	}
	if err != nil {
		t.Fatal(err)
	}
	c.resume()
	if shared {
		ndtest.Expect(t, pr.Active.OutCQ, sr, nd.Success, size)
		ndtest.Expect(t, pr.Passive.InCQ, rr, nd.Success, size)
		if !bytes.Equal(rbuf, want) {
			t.Fatal("the Receive did not get the message")
		}
		return
	}
	ndtest.Expect(t, pr.Active.OutCQ, sr, nd.ErrRemoteError, -1)
	ndtest.Expect(t, pr.Passive.InCQ, rr, nd.ErrCanceled, -1)
	ndtest.Expect(t, pr.Passive.InCQ, other, nd.ErrCanceled, -1)
	ndtest.AwaitDisconnect(t, pr.Passive.Connector, "the unmapped Send buffer")
	if !bytes.Equal(rbuf, bytes.Repeat([]byte{0xA5}, size)) {
		t.Fatal("the Receive's buffer changed")
	}
}

// TestRendezvousTeardownWaitsForPull: the sender disconnects while a Send
// by rendezvous is in flight and the receiver's reader has not pulled it
// yet (held back at its hook). The Send must not complete (handing its
// buffer back to the application) until the receiver is done with it;
// the receiver, draining after the hang-up, pulls the original bytes.
func TestRendezvousTeardownWaitsForPull(t *testing.T) {
	if selfProbe() != nil {
		t.Skip("process_vm_readv is not allowed here:", selfProbe())
	}
	p := New(Config{Namespace: "godirect-nd-shm-test-" + t.Name()})
	c := hookLinks(t, p)
	pr := ndtest.NewPair(t, p, ndtest.PairConfig{})
	a, ps := c.links(t)
	var waiting atomic.Bool
	h := func(l *link) {
		if l == a {
			waiting.Store(true)
		}
	}
	t.Cleanup(updateSeams(func(s *testSeams) { s.onUnread = h }))
	const size = 200 << 10
	sbuf := make([]byte, size)
	for i := range sbuf {
		sbuf[i] = byte(i*3 + 1)
	}
	want := bytes.Clone(sbuf)
	smr := pr.Active.Register(t, sbuf)
	rbuf := make([]byte, size)
	rmr := pr.Passive.Register(t, rbuf)
	rr, sr := new(nd.Result), new(nd.Result)
	if err := pr.Passive.Endpoint.Receive(rr, []nd.SGE{{Buffer: rbuf, Region: rmr}}); err != nil {
		t.Fatal(err)
	}
	c.hold(t, ps)
	sent0, _ := RendezvousCounts(p)
	if err := pr.Active.Endpoint.Send(sr, []nd.SGE{{Buffer: sbuf, Region: smr}}, 0); err != nil {
		t.Fatal(err)
	}
	if s, _ := RendezvousCounts(p); s != sent0+1 {
		t.Fatal("the Send did not go by rendezvous")
	}
	if err := pr.Active.Connector.Disconnect(t.Context()); err != nil {
		t.Fatal(err)
	}
	if !spinUntil(waiting.Load) {
		t.Fatal("the sender's teardown did not wait for the receiver")
	}
	ndtest.ExpectEmpty(t, pr.Active.OutCQ)
	c.resume()
	got := ndtest.Wait(t, pr.Active.OutCQ)
	if got != sr || (sr.Status != nd.ErrCanceled && sr.Status != nd.Success) {
		t.Fatalf("the Send completed %p with %v, want %p with ND_CANCELED or ND_SUCCESS", got, got.Status, sr)
	}
	clear(sbuf) // the application owns its buffer again
	ndtest.Expect(t, pr.Passive.InCQ, rr, nd.Success, size)
	if !bytes.Equal(rbuf, want) {
		t.Fatal("the Receive did not get the bytes sent")
	}
}

// TestSplitRemote: cutting a buffer list anywhere keeps every byte, in
// order, in one part or the other.
func TestSplitRemote(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		n := 1 + rng.IntN(maxIovs)
		var orig [maxIovs]remoteIovec
		total := 0
		for i := range n {
			orig[i] = remoteIovec{Base: uintptr(1000 * (i + 1) << 20), Len: rng.IntN(3) * rng.IntN(50)}
			total += orig[i].Len
		}
		if total == 0 {
			continue
		}
		cut := rng.IntN(total)
		list := orig
		var rest [maxIovs]remoteIovec
		first, second := splitRemote(list[:n], cut, &rest)
		sum := func(v []remoteIovec) int {
			s := 0
			for _, e := range v {
				s += e.Len
			}
			return s
		}
		if sum(first) != cut || sum(second) != total-cut {
			t.Fatalf("cut %d of %d: parts of %d and %d bytes", cut, total, sum(first), sum(second))
		}
		// The bytes, as (address) in order, are the original's.
		var got, want []uintptr
		for _, e := range append(append([]remoteIovec(nil), first...), second...) {
			for b := range e.Len {
				got = append(got, e.Base+uintptr(b))
			}
		}
		for _, e := range orig[:n] {
			for b := range e.Len {
				want = append(want, e.Base+uintptr(b))
			}
		}
		if !slices.Equal(got, want) {
			t.Fatalf("cut %d of %v: the parts %v and %v do not name the same bytes", cut, orig[:n], first, second)
		}
	}
}

// TestPullSplit drives split pulls (against this process's own memory)
// with a helper that never runs (the poller takes every part back, and
// a job it took back waits for the helper to drop later), then with the
// helper running, then after it stopped: every pull places exactly the
// bytes asked for.
func TestPullSplit(t *testing.T) {
	if selfProbe() != nil {
		t.Skip("process_vm_readv is not allowed here:", selfProbe())
	}
	const size = 3 << 19
	src, dst := make([]byte, size), make([]byte, size+100)
	fill := bytes.Repeat([]byte{0xEE}, len(dst))
	for i := range src {
		src[i] = byte(i*7 + i>>11)
	}
	cfg := DefaultConfig()
	l := &link{}
	l.pid, l.done, l.t = selfPeer(t), make(chan struct{}), &transport{progress: newProgress(&cfg)}
	idle := &pullHelper{req: make(chan pullJob, 1), stop: make(chan struct{})}
	l.t.progress.helper = idle
	l.r.split.done, l.r.split.share = make(chan error, 1), shareMax
	rng := rand.New(rand.NewPCG(3, 4))
	round := func(t *testing.T) {
		t.Helper()
		total := splitMin + rng.IntN(size-splitMin)
		// The peer's side in three pieces, the Receive's in three others.
		a, b := 1+rng.IntN(total-2), 0
		b = a + 1 + rng.IntN(total-a-1)
		var remote [maxIovs]remoteIovec
		remote[0] = remoteIovec{Base: uintptr(addrOf(src)), Len: a}
		remote[1] = remoteIovec{Base: uintptr(addrOf(src[a:])), Len: b - a}
		remote[2] = remoteIovec{Base: uintptr(addrOf(src[b:])), Len: total - b}
		copy(l.r.remote[:], remote[:3])
		// The Receive: dst[:c], dst[c+10:c+60], dst[c+70:], the gaps and
		// what follows the message left alone.
		c := rng.IntN(total - 50)
		sgl := []nd.SGE{{Buffer: dst[:c]}, {Buffer: dst[c+10 : c+60]}, {Buffer: dst[c+70:]}}
		copy(dst, fill)
		if err := l.pull(sgl, total, l.r.remote[:3]); err != nil {
			t.Fatalf("pull of %d bytes: %v", total, err)
		}
		want := bytes.Clone(fill)
		copy(want, src[:c])
		copy(want[c+10:], src[c:c+50])
		copy(want[c+70:], src[c+50:total])
		if !bytes.Equal(dst, want) {
			t.Fatalf("pull of %d bytes (cuts %d, %d; Receive cut %d, share %d) placed the wrong bytes", total, a, b, c, l.r.split.share)
		}
	}
	for range 20 {
		round(t)
	}
	if l.r.split.seq != 20 || len(idle.req) != 1 || l.r.split.share != max(shareMax-20*shareStep, shareMin) {
		t.Fatalf("%d jobs offered, %d waiting: the poller did not take them back", l.r.split.seq, len(idle.req))
	}
	ran := make(chan struct{})
	go func() { idle.run(); close(ran) }() // the helper starts, with a job taken back waiting
	for range 30 {
		round(t)
	}
	close(idle.stop)
	<-ran
	for range 5 {
		round(t)
	}
}
