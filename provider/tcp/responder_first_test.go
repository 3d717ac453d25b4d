package tcp_test

import (
	"bufio"
	"context"
	"encoding/binary"
	"io"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/godirect/nd"
	"github.com/godirect/nd/internal/iwarp"
	"github.com/godirect/nd/ndtest"
	"github.com/godirect/nd/provider/tcp"
)

// A passive side whose initiator asked for no ready-to-receive frame, as
// Linux siw does with its defaults, may speak first (perftest's write_lat
// server writes first): its frames leave once the initiator's TCP
// acknowledged the MPA reply, without waiting for an FPDU that such an
// initiator never sends first.
func TestResponderSpeaksFirstToSIWInitiator(t *testing.T) {
	for _, tc := range []struct {
		name    string
		unacked func() (int, error) // nil: the socket's own count
	}{
		{"socket", nil},
		{"acknowledged", func() (int, error) { return 0, nil }},
		{"unknown", func() (int, error) { return 0, tcp.ErrUnackedUnknown }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.unacked != nil {
				tcp.SetReplyDelivery(t, tc.unacked, time.Millisecond, 5*time.Millisecond)
			}
			srv := startGreeter(t)
			c := dialNoRTR(t, srv.addr)
			seg := c.readSegment(t)
			if seg.Opcode != iwarp.OpSend || string(seg.Payload) != greeting {
				t.Fatalf("first FPDU %v with %q, want a Send of %q", seg.Opcode, seg.Payload, greeting)
			}
			srv.wait(t, nd.Success)
		})
	}
}

// Until the reply was seen acknowledged, nothing leaves: here the count of
// unacknowledged bytes never reaches 0, and the greeting leaves only after
// the initiator's first FPDU.
func TestResponderWaitsForTheReplyAcknowledged(t *testing.T) {
	tcp.SetReplyDelivery(t, func() (int, error) { return 1, nil }, time.Millisecond, time.Millisecond)
	srv := startGreeter(t)
	c := dialNoRTR(t, srv.addr)
	c.conn.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
	if b, err := c.br.Peek(1); err == nil {
		t.Fatalf("the responder sent %#x before the reply was acknowledged or the initiator spoke", b)
	} else if ne, ok := err.(net.Error); !ok || !ne.Timeout() {
		t.Fatalf("reading after the reply: %v, want a timeout", err)
	}
	c.conn.SetReadDeadline(time.Time{})
	frame, err := iwarp.AppendFPDUSegment(nil, &iwarp.SegmentHeader{Opcode: iwarp.OpSend, Last: true, QN: iwarp.QNSend, MSN: 1}, []byte(ping), false)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.conn.Write(frame); err != nil {
		t.Fatal(err)
	}
	seg := c.readSegment(t)
	if seg.Opcode != iwarp.OpSend || string(seg.Payload) != greeting {
		t.Fatalf("first FPDU %v with %q, want a Send of %q", seg.Opcode, seg.Payload, greeting)
	}
	srv.wait(t, nd.Success)
	if got := <-srv.received; got != ping {
		t.Fatalf("the responder received %q, want %q", got, ping)
	}
}

const (
	greeting = "the responder speaks first"
	ping     = "ping"
)

// greeter is a tcp listener that accepts one connection, with a Receive
// posted, and Sends greeting at once.
type greeter struct {
	addr     netip.AddrPort
	sent     chan nd.Status // the greeting's completion status
	received chan string    // what the Receive got
}

func startGreeter(t *testing.T) *greeter {
	cfg := tcp.DefaultConfig()
	cfg.Addresses = []netip.Addr{netip.MustParseAddr("127.0.0.1")}
	a, err := tcp.New(cfg).OpenAdapter(netip.MustParseAddr("127.0.0.1"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	ln, err := a.Listen(0, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	s := ndtest.NewSide(t, a, ndtest.DefaultLimits, 8, false)
	buf := make([]byte, 64)
	copy(buf, greeting)
	region := s.Register(t, buf)
	in := make([]byte, 64)
	inRegion := s.Register(t, in)
	g := &greeter{addr: netip.AddrPortFrom(a.Address(), ln.Port()), sent: make(chan nd.Status, 1), received: make(chan string, 1)}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	go func() {
		var recv, send nd.Result
		if err := s.Endpoint.Receive(&recv, []nd.SGE{{Buffer: in, Region: inRegion}}); err != nil {
			g.sent <- nd.StatusOf(err)
			return
		}
		if err := ln.GetConnectionRequest(ctx, s.Connector); err != nil {
			g.sent <- nd.StatusOf(err)
			return
		}
		if err := s.Connector.Accept(ctx, s.Endpoint, nil); err != nil {
			g.sent <- nd.StatusOf(err)
			return
		}
		if err := s.Endpoint.Send(&send, []nd.SGE{{Buffer: buf[:len(greeting)], Region: region}}, 0); err != nil {
			g.sent <- nd.StatusOf(err)
			return
		}
		deadline, _ := ctx.Deadline()
		r := waitResult(s.OutCQ, deadline)
		if r == nil {
			g.sent <- nd.Pending
			return
		}
		g.sent <- r.Status
		if r := waitResult(s.InCQ, deadline); r != nil && r.Status == nd.Success {
			g.received <- string(in[:r.BytesTransferred])
		} else {
			g.received <- ""
		}
	}()
	return g
}

func (g *greeter) wait(t *testing.T, want nd.Status) {
	t.Helper()
	select {
	case st := <-g.sent:
		if st != want {
			t.Fatalf("the greeting completed with %v, want %v", st, want)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the greeting did not complete")
	}
}

// noRTRInitiator is a raw MPA initiator as Linux siw is with its defaults:
// MPA revision 2, enhanced, not peer-to-peer, no godirect prefix.
type noRTRInitiator struct {
	conn *net.TCPConn
	br   *bufio.Reader
}

func dialNoRTR(t *testing.T, addr netip.AddrPort) *noRTRInitiator {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr.String(), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	r := &noRTRInitiator{conn: c.(*net.TCPConn), br: bufio.NewReader(c)}
	req := iwarp.MPAFrame{Kind: iwarp.MPARequest, Revision: iwarp.MPARevision2, Enhanced: true, IRD: 1, ORD: 1}
	b, err := iwarp.AppendMPAFrame(nil, &req)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Write(b); err != nil {
		t.Fatal(err)
	}
	r.conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	hdr := make([]byte, iwarp.MPAHeaderSize)
	if _, err := io.ReadFull(r.br, hdr); err != nil {
		t.Fatalf("reading the MPA reply: %v", err)
	}
	full := make([]byte, iwarp.MPAHeaderSize+int(binary.BigEndian.Uint16(hdr[18:20])))
	copy(full, hdr)
	if _, err := io.ReadFull(r.br, full[iwarp.MPAHeaderSize:]); err != nil {
		t.Fatalf("reading the MPA reply: %v", err)
	}
	rep, _, err := iwarp.ParseMPAFrame(full)
	if err != nil || rep.Kind != iwarp.MPAReply || rep.Reject || rep.PeerToPeer {
		t.Fatalf("MPA reply %+v (%v), want an accepting reply without peer-to-peer", rep, err)
	}
	r.conn.SetReadDeadline(time.Time{})
	return r
}

// readSegment reads one FPDU (no CRC).
func (r *noRTRInitiator) readSegment(t *testing.T) iwarp.Segment {
	t.Helper()
	r.conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	defer r.conn.SetReadDeadline(time.Time{})
	var l [2]byte
	if _, err := io.ReadFull(r.br, l[:]); err != nil {
		t.Fatalf("no FPDU from the responder: %v", err)
	}
	b := make([]byte, iwarp.FPDUSize(int(binary.BigEndian.Uint16(l[:]))))
	copy(b, l[:])
	if _, err := io.ReadFull(r.br, b[2:]); err != nil {
		t.Fatalf("reading an FPDU: %v", err)
	}
	ulpdu, _, err := iwarp.ParseFPDU(b, false)
	if err != nil {
		t.Fatalf("ParseFPDU: %v", err)
	}
	seg, err := iwarp.ParseSegment(ulpdu)
	if err != nil {
		t.Fatalf("ParseSegment: %v", err)
	}
	return seg
}
