package tcp_test

import (
	"context"
	"net/netip"
	"testing"
	"time"

	"github.com/godirect/nd"
	"github.com/godirect/nd/internal/iwarp"
	"github.com/godirect/nd/provider/tcp"
)

// A peer that refuses a Read Request with an RDMAP protection Terminate
// whose copied header names no Read (Linux 6.1's siw puts the Read's size
// in its MSN field), or that copies no header, still has the Read complete
// ND_ACCESS_VIOLATION: Read Requests are served in order, so the oldest one
// waiting is the one refused. The Read posted after it is flushed.
func TestTerminateBlamesOldestRead(t *testing.T) {
	for _, tc := range []struct {
		name   string
		header []byte
	}{
		{"NoHeader", nil},
		{"SizeAsMSN", mustSegmentHeader(t, iwarp.SegmentHeader{Opcode: iwarp.OpReadRequest, Last: true, QN: iwarp.QNReadRequest, MSN: 64})},
		{"UnknownMSN", mustSegmentHeader(t, iwarp.SegmentHeader{Opcode: iwarp.OpReadRequest, Last: true, QN: iwarp.QNReadRequest, MSN: 9})},
	} {
		t.Run(tc.name, func(t *testing.T) { testTerminateBlamesOldestRead(t, tc.header) })
	}
}

func mustSegmentHeader(t *testing.T, h iwarp.SegmentHeader) []byte {
	b, err := iwarp.AppendSegmentHeader(nil, &h)
	if err != nil {
		t.Fatalf("AppendSegmentHeader: %v", err)
	}
	return b
}

func testTerminateBlamesOldestRead(t *testing.T, header []byte) {
	ad, raw, a := acceptRaw(t, nd.EndpointLimits{
		InboundEntries: 2, OutboundEntries: 4, InboundSGE: 1, OutboundSGE: 1,
		InboundReadLimit: hpServerIRD, OutboundReadLimit: 2,
	}, 8, func(o *hpMPAOpts) { o.ird = 3 }) // two Reads from the server (the wire value has one more)
	ctx := t.Context()

	buf := make([]byte, 128)
	mr, err := ad.RegisterMemory(ctx, buf)
	if err != nil {
		t.Fatalf("RegisterMemory: %v", err)
	}
	defer ad.DeregisterMemory(context.Background(), mr)
	remote := nd.MWDescriptor{Base: 0x1000, Length: 4096, Token: 0x0bad}
	var refused, later nd.Result
	if err := a.ep.Read(&refused, []nd.SGE{{Buffer: buf[:64], Region: mr}}, remote, 0, 0); err != nil {
		t.Fatalf("Read: %v", err)
	}
	if err := a.ep.Read(&later, []nd.SGE{{Buffer: buf[64:], Region: mr}}, remote, 64, 0); err != nil {
		t.Fatalf("Read: %v", err)
	}
	for seen := 0; seen < 2; {
		seg, err := raw.readSegment(5 * time.Second)
		if err != nil {
			t.Fatalf("waiting for the Read Requests: %v", err)
		}
		if seg.Opcode == iwarp.OpReadRequest {
			seen++
		}
	}
	term, err := iwarp.AppendTerminateFPDU(nil, 1, &iwarp.Terminate{
		Layer: iwarp.TermLayerRDMAP, EType: iwarp.TermRDMAPRemoteProtection, Code: iwarp.TermCodeInvalidSTag,
		DDPHeader: header,
	}, raw.crc)
	if err != nil {
		t.Fatalf("AppendTerminateFPDU: %v", err)
	}
	if err := raw.put(term); err != nil {
		t.Fatalf("writing the Terminate: %v", err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for i, want := range []struct {
		r  *nd.Result
		st nd.Status
	}{{&refused, nd.ErrAccessViolation}, {&later, nd.ErrCanceled}} {
		got := waitResult(a.cq, deadline)
		if got != want.r {
			t.Fatalf("completion %d is %p, want %p", i, got, want.r)
		}
		if got.Status != want.st {
			t.Errorf("Read %d completed %v, want %v", i, got.Status, want.st)
		}
	}
}

// rawAccepted is the ND side of a connection that a raw peer made.
type rawAccepted struct {
	c   nd.Connector
	ep  nd.Endpoint
	cq  nd.CompletionQueue // the endpoint's only queue, cqEntries long
	err error
}

// acceptRaw connects a raw iWARP peer (MPA options hpDefaultOpts(false)
// as opts changes them) to a TCP adapter on the loopback address, whose
// endpoint of the given limits accepts; the raw peer has sent its
// ready-to-receive frame. Everything is closed when the test ends.
func acceptRaw(t *testing.T, limits nd.EndpointLimits, cqEntries int, opts func(*hpMPAOpts)) (nd.Adapter, *hpRaw, rawAccepted) {
	t.Helper()
	p := tcp.New(hpConfig())
	ad, err := p.OpenAdapter(netip.MustParseAddr("127.0.0.1"))
	if err != nil {
		t.Fatalf("OpenAdapter: %v", err)
	}
	t.Cleanup(func() { ad.Close() })
	ln, err := ad.Listen(0, hpProtocol, 0)
	if err != nil {
		t.Fatalf("Listen: %v", err)
	}
	t.Cleanup(func() { ln.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	acc := make(chan rawAccepted, 1)
	go func() {
		c, err := ad.CreateConnector()
		if err == nil {
			err = ln.GetConnectionRequest(ctx, c)
		}
		if err != nil {
			acc <- rawAccepted{err: err}
			return
		}
		cq, err := ad.CreateCompletionQueue(cqEntries)
		if err != nil {
			acc <- rawAccepted{err: err}
			return
		}
		ep, err := c.CreateEndpoint(cq, cq, limits)
		if err == nil {
			err = c.Accept(ctx, ep, nil)
		}
		acc <- rawAccepted{c, ep, cq, err}
	}()
	raw := hpDial(t, netip.AddrPortFrom(ad.Address(), ln.Port()))
	o := hpDefaultOpts(false)
	opts(&o)
	raw.handshake(o)
	if err := raw.put(raw.rtr()); err != nil {
		t.Fatalf("writing the RTR: %v", err)
	}
	a := <-acc
	if a.err != nil {
		t.Fatalf("accepting: %v", a.err)
	}
	t.Cleanup(func() {
		a.ep.Close()
		a.cq.Close()
	})
	return ad, raw, a
}
