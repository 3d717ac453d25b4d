package tcp_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/godirect/nd/internal/iwarp"
	"github.com/godirect/nd/ndtest"
	"github.com/godirect/nd/provider/tcp"
)

// An active side facing a foreign responder in peer-to-peer mode that
// answers nothing after the RTR (as siw does when the RTR reached its
// socket before it installed the callback that reads it) sends zero-length
// RDMA Writes after the RTR, as many as configured and no more, so that
// the responder's socket gets new bytes and reads the RTR.
func TestSilentForeignPeerIsNudged(t *testing.T) {
	for _, crc := range []bool{false, true} {
		for _, rtr := range []iwarp.RTRFlags{iwarp.RTRWrite, iwarp.RTRRead} {
			t.Run(rtrCaseName(crc, rtr), func(t *testing.T) {
				tcp.SetRTRNudge(t, time.Millisecond, 2)
				testNudges(t, crc, rtr, 2)
			})
		}
	}
}

func testNudges(t *testing.T, crc bool, rtr iwarp.RTRFlags, nudges int) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	seen := make(chan struct{}) // the RTR and every nudge arrived
	frames := make(chan []iwarp.Segment, 1)
	fail := make(chan error, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			fail <- err
			return
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(10 * time.Second))
		buf := make([]byte, 4096)
		n, err := io.ReadAtLeast(c, buf, 20)
		if err != nil {
			fail <- err
			return
		}
		req, used, err := iwarp.ParseMPAFrame(buf[:n])
		for errors.Is(err, iwarp.ErrShortBuffer) {
			var m int
			if m, err = c.Read(buf[n:]); err != nil {
				fail <- err
				return
			}
			n += m
			req, used, err = iwarp.ParseMPAFrame(buf[:n])
		}
		if err != nil || !req.PeerToPeer {
			fail <- errors.New("no peer-to-peer MPA request")
			return
		}
		rep := iwarp.MPAFrame{Kind: iwarp.MPAReply, Revision: iwarp.MPARevision2, Enhanced: true,
			CRC: req.CRC, IRD: 1, ORD: 1, PeerToPeer: true, RTR: rtr}
		b, _ := iwarp.AppendMPAFrame(nil, &rep)
		if _, err := c.Write(b); err != nil {
			fail <- err
			return
		}
		// FPDUs until the close; seen once the RTR and the nudges are in.
		rest := append([]byte(nil), buf[used:n]...)
		var segs []iwarp.Segment
		closed := false
		for !closed {
			for {
				ulpdu, size, err := iwarp.ParseFPDU(rest, req.CRC)
				if errors.Is(err, iwarp.ErrShortBuffer) {
					break
				}
				if err != nil {
					fail <- err
					return
				}
				s, err := iwarp.ParseSegment(ulpdu)
				if err != nil {
					fail <- err
					return
				}
				segs = append(segs, s)
				rest = rest[size:]
				if len(segs) == 1+nudges {
					close(seen)
				}
			}
			m, err := c.Read(buf)
			rest = append(rest, buf[:m]...)
			if err == io.EOF {
				closed = true
			} else if err != nil {
				fail <- err
				return
			}
		}
		frames <- segs
	}()

	cfg := tcp.DefaultConfig()
	cfg.Addresses = []netip.Addr{netip.MustParseAddr("127.0.0.1")}
	cfg.CRC = crc
	p := tcp.New(cfg)
	a, err := p.OpenAdapter(netip.MustParseAddr("127.0.0.1"))
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	s := ndtest.NewSide(t, a, ndtest.DefaultLimits, 8, true)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.Connector.Connect(ctx, s.Endpoint, ln.Addr().(*net.TCPAddr).AddrPort(), 6, 0, nil); err != nil {
		t.Fatalf("Connect: %v", err)
	}
	if err := s.Connector.CompleteConnect(ctx); err != nil {
		t.Fatalf("CompleteConnect: %v", err)
	}
	select {
	case err := <-fail:
		t.Fatal(err)
	case <-seen:
	case <-ctx.Done():
		t.Fatalf("the responder did not get the RTR and %d nudges", nudges)
	}
	// The nudges are over (their number is reached): a Disconnect now
	// ends the stream, and nothing but the RTR and the nudges came.
	if err := s.Connector.Disconnect(ctx); err != nil {
		t.Logf("Disconnect: %v", err)
	}
	select {
	case err := <-fail:
		t.Fatal(err)
	case segs := <-frames:
		first := iwarp.OpWrite
		if rtr == iwarp.RTRRead {
			first = iwarp.OpReadRequest
		}
		if len(segs) != 1+nudges {
			t.Fatalf("%d FPDUs after the MPA reply, want the RTR and %d nudges: %+v", len(segs), nudges, segs)
		}
		if segs[0].Opcode != first {
			t.Fatalf("first FPDU %v, want the RTR (%v)", segs[0].Opcode, first)
		}
		for i, sg := range segs[1:] {
			if sg.Opcode != iwarp.OpWrite || sg.STag != iwarp.RTRWriteSTag || len(sg.Payload) != 0 {
				t.Fatalf("nudge %d: %v STag %#x, %d bytes; want a zero-length Write through STag %#x", i+1, sg.Opcode, sg.STag, len(sg.Payload), iwarp.RTRWriteSTag)
			}
		}
	case <-time.After(15 * time.Second):
		t.Fatal("the raw responder saw no close")
	}
}
