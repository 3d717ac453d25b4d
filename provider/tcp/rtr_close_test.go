package tcp_test

import (
	"context"
	"errors"
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

// An active side that Rejects after Connect, facing a foreign responder in
// MPA v2 peer-to-peer mode (as Linux's siw answers), sends the
// ready-to-receive frame it owes first and the Terminate after it. siw
// reports the connection to iw_cm only once the RTR went through, and a
// Terminate in its place made the kernel stop (docs/iwcm-close-bug.md).
func TestRejectAfterConnectSendsRTRFirst(t *testing.T) {
	for _, crc := range []bool{false, true} {
		for _, rtr := range []iwarp.RTRFlags{iwarp.RTRWrite, iwarp.RTRRead} {
			t.Run(map[bool]string{false: "crc-off", true: "crc-on"}[crc]+"/"+map[iwarp.RTRFlags]string{iwarp.RTRWrite: "write", iwarp.RTRRead: "read"}[rtr], func(t *testing.T) {
				testRejectSendsRTRFirst(t, crc, rtr)
			})
		}
	}
}

func testRejectSendsRTRFirst(t *testing.T, crc bool, rtr iwarp.RTRFlags) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
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
		buf := make([]byte, 512)
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
		// A siw-like reply: no godirect prefix, the RTR chosen, CRC if asked.
		rep := iwarp.MPAFrame{Kind: iwarp.MPAReply, Revision: iwarp.MPARevision2, Enhanced: true,
			CRC: req.CRC, IRD: 1, ORD: 1, PeerToPeer: true, RTR: rtr}
		b, _ := iwarp.AppendMPAFrame(nil, &rep)
		if _, err := c.Write(b); err != nil {
			fail <- err
			return
		}
		// Everything until the close, as FPDUs.
		rest, _ := io.ReadAll(c)
		rest = append(buf[used:n:n], rest...)
		var segs []iwarp.Segment
		for len(rest) > 0 {
			ulpdu, size, err := iwarp.ParseFPDU(rest, req.CRC)
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
	if err := s.Connector.Reject(nil); err != nil && !errors.Is(err, nd.ErrConnectionAborted) {
		t.Fatalf("Reject after Connect: %v", err)
	}
	select {
	case err := <-fail:
		t.Fatal(err)
	case segs := <-frames:
		if len(segs) != 2 {
			t.Fatalf("%d FPDUs after the MPA reply, want the RTR and a Terminate: %+v", len(segs), segs)
		}
		want := iwarp.OpWrite
		if rtr == iwarp.RTRRead {
			want = iwarp.OpReadRequest
		}
		if segs[0].Opcode != want || segs[1].Opcode != iwarp.OpTerminate {
			t.Fatalf("FPDUs %v then %v, want %v (the RTR) then Terminate", segs[0].Opcode, segs[1].Opcode, want)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("the raw responder saw no close")
	}
}
