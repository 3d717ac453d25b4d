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

// siwResponder is a raw passive side that answers one MPA request as Linux's
// siw does (MPA v2 peer-to-peer, no godirect prefix, the RTR it chose, CRC
// if asked) and then collects every FPDU the active side sends until it
// closes the stream.
type siwResponder struct {
	ln   net.Listener
	pd   []byte               // the reply's private data
	seen chan struct{}        // closed once `want` FPDUs arrived (want 0: never)
	segs chan []iwarp.Segment // every FPDU, once the stream closed
	fail chan error
}

// startSIWResponderAs starts a responder whose reply chose rtr and carries
// pd as its private data: nil answers as siw's own application does, the
// verbs provider's prefix as godirect's verbs provider over siw does.
func startSIWResponderAs(t *testing.T, rtr iwarp.RTRFlags, want int, pd []byte) *siwResponder {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	r := &siwResponder{ln: ln, pd: pd, seen: make(chan struct{}), segs: make(chan []iwarp.Segment, 1), fail: make(chan error, 1)}
	go func() {
		if err := r.serve(rtr, want); err != nil {
			r.fail <- err
		}
	}()
	return r
}

func (r *siwResponder) addr() netip.AddrPort { return r.ln.Addr().(*net.TCPAddr).AddrPort() }

func (r *siwResponder) serve(rtr iwarp.RTRFlags, want int) error {
	c, err := r.ln.Accept()
	if err != nil {
		return err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	buf := make([]byte, 4096)
	n, err := io.ReadAtLeast(c, buf, 20)
	if err != nil {
		return err
	}
	req, used, err := iwarp.ParseMPAFrame(buf[:n])
	for errors.Is(err, iwarp.ErrShortBuffer) {
		var m int
		if m, err = c.Read(buf[n:]); err != nil {
			return err
		}
		n += m
		req, used, err = iwarp.ParseMPAFrame(buf[:n])
	}
	if err != nil || !req.PeerToPeer {
		return errors.New("no peer-to-peer MPA request")
	}
	rep := iwarp.MPAFrame{Kind: iwarp.MPAReply, Revision: iwarp.MPARevision2, Enhanced: true,
		CRC: req.CRC, IRD: 1, ORD: 1, PeerToPeer: true, RTR: rtr, PrivateData: r.pd}
	b, _ := iwarp.AppendMPAFrame(nil, &rep)
	if _, err := c.Write(b); err != nil {
		return err
	}
	rest := append([]byte(nil), buf[used:n]...)
	var segs []iwarp.Segment
	for {
		for {
			ulpdu, size, err := iwarp.ParseFPDU(rest, req.CRC)
			if errors.Is(err, iwarp.ErrShortBuffer) {
				break
			}
			if err != nil {
				return err
			}
			s, err := iwarp.ParseSegment(ulpdu)
			if err != nil {
				return err
			}
			segs = append(segs, s)
			rest = rest[size:]
			if len(segs) == want {
				close(r.seen)
			}
		}
		m, err := c.Read(buf)
		rest = append(rest, buf[:m]...)
		if err == io.EOF {
			if len(rest) > 0 {
				return errors.New("the stream ended inside an FPDU")
			}
			r.segs <- segs
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// frames waits for every FPDU the responder got until the close.
func (r *siwResponder) frames(t *testing.T) []iwarp.Segment {
	t.Helper()
	select {
	case err := <-r.fail:
		t.Fatal(err)
	case segs := <-r.segs:
		return segs
	case <-time.After(15 * time.Second):
		t.Fatal("the raw responder saw no close")
	}
	return nil
}

// rtrOpcode is the opcode of the ready-to-receive frame rtr asks for.
func rtrOpcode(rtr iwarp.RTRFlags) iwarp.Opcode {
	if rtr == iwarp.RTRRead {
		return iwarp.OpReadRequest
	}
	return iwarp.OpWrite
}

// connectToResponder opens a tcp adapter with crc and sends its Connect to
// r; the caller ends the connection.
func connectToResponder(t *testing.T, r *siwResponder, crc bool) (*ndtest.Side, context.Context) {
	cfg := tcp.DefaultConfig()
	cfg.Addresses = []netip.Addr{netip.MustParseAddr("127.0.0.1")}
	cfg.CRC = crc
	a, err := tcp.New(cfg).OpenAdapter(netip.MustParseAddr("127.0.0.1"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	s := ndtest.NewSide(t, a, ndtest.DefaultLimits, 8, true)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	if err := s.Connector.Connect(ctx, s.Endpoint, r.addr(), 6, 0, nil); err != nil {
		t.Fatalf("Connect: %v", err)
	}
	return s, ctx
}
