package tcp_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/netip"
	"slices"
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
			t.Run(rtrCaseName(crc, rtr), func(t *testing.T) {
				testSendsRTRFirst(t, crc, rtr, rejectAfterConnect, iwarp.OpTerminate)
			})
		}
	}
}

// The same when the connection ends right after CompleteConnect, before
// the writer took the RTR that CompleteConnect queued: a Disconnect (the
// RTR, then the close) and a local failure (the RTR, then a Terminate).
// Without the RTR a siw responder sees the FIN or the Terminate first.
func TestCloseAsWriterStartsSendsRTRFirst(t *testing.T) {
	for _, status := range []nd.Status{nd.Success, nd.ErrInternalError} {
		for _, crc := range []bool{false, true} {
			for _, rtr := range []iwarp.RTRFlags{iwarp.RTRWrite, iwarp.RTRRead} {
				name := "disconnect/"
				then := []iwarp.Opcode{}
				if status != nd.Success {
					name, then = "failure/", []iwarp.Opcode{iwarp.OpTerminate}
				}
				t.Run(name+rtrCaseName(crc, rtr), func(t *testing.T) {
					tcp.CloseAsWriterStarts(t, status)
					testSendsRTRFirst(t, crc, rtr, completeConnect, then...)
				})
			}
		}
	}
}

func rtrCaseName(crc bool, rtr iwarp.RTRFlags) string {
	return map[bool]string{false: "crc-off", true: "crc-on"}[crc] + "/" + map[iwarp.RTRFlags]string{iwarp.RTRWrite: "write", iwarp.RTRRead: "read"}[rtr]
}

// rejectAfterConnect and completeConnect end an active side's Connect.
func rejectAfterConnect(t *testing.T, s *ndtest.Side, ctx context.Context) {
	if err := s.Connector.Reject(nil); err != nil && !errors.Is(err, nd.ErrConnectionAborted) {
		t.Fatalf("Reject after Connect: %v", err)
	}
}

func completeConnect(t *testing.T, s *ndtest.Side, ctx context.Context) {
	if err := s.Connector.CompleteConnect(ctx); err != nil && !errors.Is(err, nd.ErrConnectionAborted) {
		t.Fatalf("CompleteConnect: %v", err)
	}
}

// testSendsRTRFirst connects to a raw siw-like responder that chose rtr,
// ends the connection with end, and checks that the FPDUs the responder
// got until the close are the RTR and then the opcodes then.
func testSendsRTRFirst(t *testing.T, crc bool, rtr iwarp.RTRFlags, end func(*testing.T, *ndtest.Side, context.Context), then ...iwarp.Opcode) {
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
	end(t, s, ctx)
	select {
	case err := <-fail:
		t.Fatal(err)
	case segs := <-frames:
		first := iwarp.OpWrite
		if rtr == iwarp.RTRRead {
			first = iwarp.OpReadRequest
		}
		want := append([]iwarp.Opcode{first}, then...)
		got := make([]iwarp.Opcode, len(segs))
		for i := range segs {
			got[i] = segs[i].Opcode
		}
		if !slices.Equal(got, want) {
			t.Fatalf("FPDUs after the MPA reply %v, want %v (the RTR first)", got, want)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("the raw responder saw no close")
	}
}
