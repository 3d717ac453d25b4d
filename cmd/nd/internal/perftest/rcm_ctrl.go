package perftest

// nd perf -R's control connection: the rdma_cm connection over which
// perftest's sides exchange their versions, the system data, the
// pingpong_dests, the handshakes and the bandwidth reports. Both sides keep
// one Receive posted and every exchange is lock-step: the client Sends
// first and then waits for the server's Send, the server receives first.

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"strconv"

	"github.com/godirect/nd"
	"github.com/godirect/nd/cmd/nd/internal/cli"
	"github.com/godirect/nd/cmd/nd/internal/datapath"
	"github.com/godirect/nd/cmd/nd/internal/session"
)

// rcmCtrl is one side of the control connection. It is used by one
// goroutine.
type rcmCtrl struct {
	server     bool
	s          *session.Session
	mr         nd.MemoryRegion
	recvBuf    []byte
	sendBuf    []byte
	recvSGL    [1]nd.SGE
	sendSGL    [1]nd.SGE
	recv, send nd.Result
	wait       *datapath.Waiter

	peerVersion string
	wide        bool    // the peer uses the 64-byte pingpong_dest
	cycle       int     // the cycle buffer both sides agreed on
	hsDest      rcmDest // what handshakes carry: the first data connection's description once there is one
}

// rcmCtrlLimits: one Receive posted at a time, one Send, no Reads (perftest's
// control connection asks for 0/0).
var rcmCtrlLimits = nd.EndpointLimits{InboundEntries: 1, OutboundEntries: 1, InboundSGE: 1, OutboundSGE: 1}

// newRcmCtrl creates the control side on conn (nil: a new connector) and
// posts its Receive.
func newRcmCtrl(ctx context.Context, a nd.Adapter, conn nd.Connector, server bool) (_ *rcmCtrl, err error) {
	c := &rcmCtrl{server: server}
	mem, mr, err := datapath.Registered(ctx, a, 2*rcmRecvSize)
	if err != nil {
		return nil, err
	}
	c.mr = mr
	c.recvBuf, c.sendBuf = mem[:rcmRecvSize], mem[rcmRecvSize:]
	c.recvSGL[0] = nd.SGE{Buffer: c.recvBuf, Region: mr}
	if c.s, err = session.New(a, conn, rcmCtrlLimits); err != nil {
		datapath.Deregister(ctx, a, mr)
		return nil, err
	}
	c.wait = datapath.NewWaiter(c.s.CQ)
	if err := c.s.EP.Receive(&c.recv, c.recvSGL[:]); err != nil {
		c.close(ctx)
		return nil, fmt.Errorf("posting the control Receive: %w", err)
	}
	return c, nil
}

// close tears the control connection down.
func (c *rcmCtrl) close(ctx context.Context) {
	c.s.Close()
	datapath.Deregister(ctx, c.s.Adapter, c.mr)
}

// xchg does one lock-step exchange: it sends mine and returns the peer's
// message, which must have want bytes. With last, a Send that the peer's
// disconnect cancels after it got it is no error (the close handshake).
func (c *rcmCtrl) xchg(ctx context.Context, mine []byte, want int, what string, last bool) ([]byte, error) {
	if c.server {
		got, err := c.receive(ctx, want, what)
		if err != nil {
			return nil, err
		}
		return got, c.sendMsg(ctx, mine, what, last)
	}
	if err := c.sendMsg(ctx, mine, what, false); err != nil {
		return nil, err
	}
	return c.receive(ctx, want, what)
}

// sendMsg sends b and waits for the Send to complete.
func (c *rcmCtrl) sendMsg(ctx context.Context, b []byte, what string, last bool) error {
	c.sendSGL[0] = nd.SGE{Buffer: c.sendBuf[:copy(c.sendBuf, b)], Region: c.mr}
	if err := c.s.EP.Send(&c.send, c.sendSGL[:], 0); err != nil {
		return fmt.Errorf("sending %s: %w", what, err)
	}
	if err := c.wait.Wait(ctx, &c.send); err != nil {
		return err
	}
	if err := c.send.Status.Err(); err != nil && !(last && c.send.Status == nd.ErrCanceled) {
		return fmt.Errorf("the Send of %s completed with %w", what, err)
	}
	return nil
}

// receive waits for the peer's next message, checks its size, reposts the
// Receive and returns a copy of the message.
func (c *rcmCtrl) receive(ctx context.Context, want int, what string) ([]byte, error) {
	if err := c.wait.Wait(ctx, &c.recv); err != nil {
		return nil, err
	}
	if err := c.recv.Status.Err(); err != nil {
		return nil, fmt.Errorf("waiting for %s: the control Receive completed with %w", what, err)
	}
	n := c.recv.BytesTransferred
	if n != want {
		return nil, fmt.Errorf("%s: the peer sent %d bytes, want %d", what, n, want)
	}
	got := append([]byte(nil), c.recvBuf[:n]...)
	if err := c.s.EP.Receive(&c.recv, c.recvSGL[:]); err != nil {
		return nil, fmt.Errorf("reposting the control Receive: %w", err)
	}
	return got, nil
}

// preamble exchanges the version, the system data and the MTU.
func (c *rcmCtrl) preamble(ctx context.Context) error {
	v := make([]byte, rcmVersionSize)
	copy(v, rcmVersion)
	got, err := c.xchg(ctx, v, rcmVersionSize, "the version", false)
	if err != nil {
		return err
	}
	c.peerVersion = string(cli.CString(got))
	f, err := strconv.ParseFloat(c.peerVersion, 64)
	if err != nil || f < rcmMinVersion {
		return fmt.Errorf("the peer is perftest %q: -R speaks with %.2f and later", c.peerVersion, rcmMinVersion)
	}
	c.wide = f >= rcmWideVersion
	be := binary.BigEndian
	c.cycle = os.Getpagesize()
	got, err = c.xchg(ctx, be.AppendUint32(nil, uint32(c.cycle)), 4, "the cycle buffer size", false)
	if err != nil {
		return err
	}
	c.cycle = max(c.cycle, int(be.Uint32(got)))
	if _, err := c.xchg(ctx, be.AppendUint32(nil, rcmCacheLine), 4, "the cache line size", false); err != nil {
		return err
	}
	if _, err := c.xchg(ctx, append([]byte(rcmMTU), 0), len(rcmMTU)+1, "the MTU", false); err != nil {
		return err
	}
	return nil
}

// xchgDest exchanges pingpong_dests: a handshake, or a data connection's
// description.
func (c *rcmCtrl) xchgDest(ctx context.Context, d rcmDest, what string, last bool) (rcmDest, error) {
	var b [rcmWideDestSize]byte
	mine := d.put(b[:], c.wide)
	got, err := c.xchg(ctx, mine, len(mine), what, last)
	if err != nil {
		return rcmDest{}, err
	}
	return parseRcmDest(got, c.wide), nil
}

// handshake is perftest's ctx_hand_shake used to wait for the peer. It
// carries the first data connection's description, as perftest's do: a
// perftest peer stores what it receives as that connection's remote side
// (write_lat and read_lat post their requests with what the last handshake
// before the traffic brought).
func (c *rcmCtrl) handshake(ctx context.Context, what string) error {
	_, err := c.xchgDest(ctx, c.hsDest, what, false)
	return err
}

// xchgReport exchanges bandwidth reports, field by field.
func (c *rcmCtrl) xchgReport(ctx context.Context, r rcmReport) (rcmReport, error) {
	mine := [rcmReportFields]uint64{r.size, r.iters, math.Float64bits(r.peak), math.Float64bits(r.average), math.Float64bits(r.mRate)}
	var theirs [rcmReportFields]uint64
	for i, v := range mine {
		got, err := c.xchg(ctx, binary.BigEndian.AppendUint64(nil, v), 8, "the bandwidth report", false)
		if err != nil {
			return rcmReport{}, err
		}
		theirs[i] = binary.BigEndian.Uint64(got)
	}
	return rcmReport{
		size: theirs[0], iters: theirs[1],
		peak: math.Float64frombits(theirs[2]), average: math.Float64frombits(theirs[3]), mRate: math.Float64frombits(theirs[4]),
	}, nil
}
