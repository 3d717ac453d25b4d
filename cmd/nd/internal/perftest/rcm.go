package perftest

// nd perf -R (--rdma_cm): perftest's six tests speaking perftest 6.06's
// rdma_cm protocol instead of nd perf's own, so that nd perf runs against
// ib_send_bw, ib_send_lat, ib_write_bw, ib_write_lat, ib_read_bw and
// ib_read_lat -R, in either role (the protocol of perftest's
// src/perftest_communication.c).
//
// Both sides first connect a control connection (rcm_ctrl.go) and
// exchange the version ("6.06"), the cycle buffer and cache line sizes, the
// MTU as text and a handshake; then the client connects the -q data
// connections to the same port (rcm_conn.go), a handshake follows,
// and a series of pingpong_dest exchanges hands over the buffers: the
// server's window for write_bw and read_bw, the client's credit word for
// send_bw (into which the server RDMA-Writes its receive count every
// rx_depth/3 Receives on iWARP, which has no receiver-not-ready retry; on
// RoCE and InfiniBand perftest writes no credits and its client's Sends
// wait for the server's Receives instead), each side's
// window for write_lat, the server's for read_lat. Then the traffic of each
// size (rcm_bw.go, rcm_lat.go), with the handshakes and reports
// each test has around it, and the close handshake (write_lat has none).
// perftest sends none of its parameters: both sides need the same -n or
// -D, -s or -a, and -q.

import (
	"context"
	"fmt"
	"io"
	"net/netip"
	"slices"
	"time"

	"github.com/godirect/nd"
	"github.com/godirect/nd/cmd/nd/internal/cli"
	"github.com/godirect/nd/cmd/nd/internal/session"
)

// checkRCM checks the flags that -R cannot honour.
func (c *Config) checkRCM() error {
	switch {
	case c.all && c.duration > 0:
		return cli.Usagef("-R runs all sizes (-a) by iterations, not -D (as perftest)")
	case c.outReads < 0:
		return cli.Usagef("-o %d: the outstanding Reads are 1 or more (0: the adapter's most)", c.outReads)
	case c.outReads > 0 && c.Test.op != opRead:
		return cli.Usagef("-o applies to read_bw and read_lat, not %s", c.Test.Name)
	case c.inProcess || (c.target == "" && !c.server):
		return cli.Usagef("-R needs --server or the server's ADDRESS")
	case c.JSON || c.plot != "":
		return cli.Usagef("--json and --plot do not apply with -R")
	}
	return nil
}

// runRCM runs the client or the server of a -R test.
func (c *Config) runRCM(ctx context.Context, p nd.Provider, addrs []netip.Addr, out io.Writer) error {
	if err := c.checkRCM(); err != nil {
		return err
	}
	if c.server {
		local, err := c.serverAddr(addrs)
		if err != nil {
			return err
		}
		return c.rcmServer(ctx, p, addrs, local, out)
	}
	target, err := session.ResolveTarget(c.target, c.port, c.portSet)
	if err != nil {
		return err
	}
	return c.rcmClient(ctx, p, addrs, target, out)
}

// newRcmSide returns the side's parameters, without connections yet.
func (c *Config) newRcmSide(a nd.Adapter, ai nd.AdapterInfo, server bool, cycle int) *rcmSide {
	s := &rcmSide{
		test: c.Test, server: server, a: a, ai: ai, sizes: c.sizes(), iters: c.Iters,
		depth: c.TxDepth, outReads: c.outReads, cycle: cycle,
	}
	if c.duration > 0 {
		s.iters, s.dur = 0, time.Duration(c.duration)*time.Second
	}
	s.maxSize = slices.Max(s.sizes)
	if s.iters > 0 {
		s.depth = min(s.depth, s.iters)
	}
	if s.test.op == opSend {
		s.rxd = rcmRxDepth(s.iters, c.all)
	}
	s.cqMod = max(1, min(c.CQMod, s.depth))
	s.credits = s.test.op == opSend && !s.test.Lat && !rnrDevice(a)
	return s
}

// deviceAdapter is what provider/verbs's adapters add to nd.Adapter: the
// RDMA device's name and whether it is an iWARP device.
type deviceAdapter interface {
	Device() (name string, iwarp bool)
}

// rnrDevice reports whether a is a RoCE or InfiniBand device of
// provider/verbs, whose Sends wait for the peer's Receive (the peer
// announces its RNR retry count), so that perftest's send_bw uses no
// credit Writes there, as perftest does on every transport but iWARP.
func rnrDevice(a nd.Adapter) bool {
	d, ok := a.(deviceAdapter)
	if !ok {
		return false
	}
	_, iwarp := d.Device()
	return !iwarp
}

// rcmClient runs the client against the perftest -R server at target.
func (c *Config) rcmClient(ctx context.Context, p nd.Provider, addrs []netip.Addr, target netip.AddrPort, out io.Writer) error {
	a, err := session.OpenAdapter(p, addrs, session.RdmacmLocal(addrs, target.Addr()))
	if err != nil {
		return err
	}
	defer a.Close()
	ai, err := session.QueryAdapter(a)
	if err != nil {
		return err
	}
	if err := session.CheckSize(ai, slices.Max(c.sizes())); err != nil {
		return err
	}
	var ctrl *rcmCtrl
	_, err = connectRetrying(ctx, target, func() (*session.Session, error) {
		var err error
		if ctrl, err = newRcmCtrl(ctx, a, nil, false); err != nil {
			return nil, err
		}
		return ctrl.s, nil
	}, func(*session.Session) { ctrl.close(ctx) })
	if err != nil {
		return fmt.Errorf("the control connection: %w", err)
	}
	defer ctrl.close(ctx)
	if err := ctrl.preamble(ctx); err != nil {
		return err
	}
	if err := ctrl.handshake(ctx, "the handshake before the data connections"); err != nil {
		return err
	}
	s := c.newRcmSide(a, ai, false, ctrl.cycle)
	defer s.close(ctx)
	if err := s.connect(ctx, target, c.QPs); err != nil {
		return err
	}
	return c.rcmTest(ctx, s, ctrl, a.Address().String(), target.String(), out)
}

// rcmServer serves one perftest -R client on target.
func (c *Config) rcmServer(ctx context.Context, p nd.Provider, addrs []netip.Addr, target netip.AddrPort, out io.Writer) error {
	a, err := session.OpenAdapter(p, addrs, target.Addr())
	if err != nil {
		return err
	}
	defer a.Close()
	ai, err := session.QueryAdapter(a)
	if err != nil {
		return err
	}
	if err := session.CheckSize(ai, slices.Max(c.sizes())); err != nil {
		return err
	}
	l, err := session.Listen(a, target.Port())
	if err != nil {
		return err
	}
	defer l.Close()
	fmt.Fprintf(out, "Listening on %s (provider %s, perftest %s protocol)\n", netip.AddrPortFrom(a.Address(), l.Port()), p.Name(), rcmVersion)
	req, err := session.NextRequest(ctx, a, l)
	if err != nil {
		return err
	}
	ctrl, err := newRcmCtrl(ctx, a, req.Conn, true)
	if err != nil {
		return req.Reject(err)
	}
	defer ctrl.close(ctx)
	if err := ctrl.s.Accept(ctx, req, nil); err != nil {
		return err
	}
	if err := ctrl.preamble(ctx); err != nil {
		return err
	}
	if err := ctrl.handshake(ctx, "the handshake before the data connections"); err != nil {
		return err
	}
	s := c.newRcmSide(a, ai, true, ctrl.cycle)
	defer s.close(ctx)
	if err := s.accept(ctx, l, c.QPs); err != nil {
		return err
	}
	l.Close()
	return c.rcmTest(ctx, s, ctrl, req.Peer.String(), a.Address().String(), out)
}

// rcmTest runs the test once the data connections are up: the handshake
// after them, the exchanges of the connection data, the traffic of each
// size, the closing exchanges, and the disconnects.
func (c *Config) rcmTest(ctx context.Context, s *rcmSide, ctrl *rcmCtrl, client, server string, out io.Writer) error {
	if err := ctrl.handshake(ctx, "the handshake after the data connections"); err != nil {
		return err
	}
	if err := s.describe(); err != nil {
		return err
	}
	ctrl.hsDest = s.conns[0].mine
	if err := s.exchange(ctx, ctrl); err != nil {
		return err
	}
	c.rcmHeader(out, client, server, ctrl.peerVersion)
	if err := s.run(ctx, ctrl, out); err != nil {
		return err
	}
	s.disconnect(ctx)
	ctrl.s.Conn.Disconnect(ctx)
	fmt.Fprintln(out, Line)
	return nil
}

// run is the traffic of every size with the exchanges around it, as
// perftest's main function of the test has them.
func (s *rcmSide) run(ctx context.Context, ctrl *rcmCtrl, out io.Writer) error {
	closing := func() error {
		_, err := ctrl.xchgDest(ctx, ctrl.hsDest, "the close handshake", true)
		return err
	}
	var stamps []int64
	if s.test.Lat && s.iters > 0 {
		stamps = make([]int64, s.iters)
	}
	switch {
	case !s.test.Lat && s.test.op != opSend: // write_bw, read_bw
		var rep rcmReport
		if !s.server {
			for _, size := range s.sizes {
				var err error
				if rep, err = s.stream(ctx, size); err != nil {
					return err
				}
				rcmBWRow(out, rep)
			}
		}
		// The server waits for the client's end, then prints its report.
		if err := ctrl.handshake(ctx, "the handshake after the traffic"); err != nil {
			return err
		}
		peer, err := ctrl.xchgReport(ctx, rep)
		if err != nil {
			return err
		}
		if s.server {
			rcmBWRow(out, peer)
		}
	case !s.test.Lat: // send_bw
		for _, size := range s.sizes {
			if s.server {
				if err := s.topUpReceives(); err != nil {
					return err
				}
			}
			if err := ctrl.handshake(ctx, "the handshake before the traffic"); err != nil {
				return err
			}
			var rep rcmReport
			var err error
			if s.server {
				rep, err = s.serveSends(ctx, size)
			} else {
				rep, err = s.stream(ctx, size)
			}
			if err != nil {
				return err
			}
			rcmBWRow(out, rep)
			if len(s.sizes) > 1 {
				if err := ctrl.handshake(ctx, "the handshake after the traffic"); err != nil {
					return err
				}
			}
		}
	case s.test.op == opSend: // send_lat
		for _, size := range s.sizes {
			if err := s.topUpReceives(); err != nil {
				return err
			}
			if err := ctrl.handshake(ctx, "the handshake before the traffic"); err != nil {
				return err
			}
			row, err := s.latency(ctx, size, stamps)
			if err != nil {
				return err
			}
			rcmPrintLat(out, row)
		}
	case s.test.op == opWrite: // write_lat: no handshake until the end
		for _, size := range s.sizes {
			row, err := s.latency(ctx, size, stamps)
			if err != nil {
				return err
			}
			rcmPrintLat(out, row)
		}
		switch {
		case s.dur > 0:
			// The peer's clock ends a moment before or after ours, and
			// it may still wait for a Write: part when it has.
			s.awaitPeerClose(ctx, s.dur/4+2*time.Second)
		case s.server:
			// The client's last Write is in place, but its completion
			// may not have reached the client yet: let the client part
			// first.
			s.awaitPeerClose(ctx, 2*time.Second)
		}
		return nil
	default: // read_lat: only the client Reads
		if !s.server {
			for _, size := range s.sizes {
				row, err := s.latency(ctx, size, stamps)
				if err != nil {
					return err
				}
				rcmPrintLat(out, row)
			}
		}
	}
	return closing()
}
