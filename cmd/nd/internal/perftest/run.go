package perftest

// The client of nd perf: connects the -q connections, all on one
// completion queue, runs each size as a step on all of them from one
// goroutine, and reports.

import (
	"context"
	"fmt"
	"io"
	"net/netip"
	"time"

	"github.com/godirect/nd"
	"github.com/godirect/nd/cmd/nd/internal/session"
	"github.com/godirect/nd/cmd/nd/internal/timing"
)

// perfClient is the client's side of a run: its connections, all on one
// completion queue, and the latency tests' samples, which every connection
// adds to.
type perfClient struct {
	q       *perfCQ
	conns   []*perfConn
	samples []int64 // lat: each iteration's time in ns, of every connection in turn
	n       int     // lat: the step's iterations
	start   timing.Instant
	end     timing.Instant
}

// close releases the connections, then the completion queue.
func (cl *perfClient) close() {
	for _, pc := range cl.conns {
		pc.close()
	}
	if cl.q != nil {
		cl.q.close()
	}
}

// Drive implements session.DataTool: it connects from adapter a to the server at
// remote, measures every size, reports to out and disconnects.
func (c *Config) Drive(ctx context.Context, a nd.Adapter, remote netip.AddrPort, out io.Writer) error {
	sizes := c.sizes()
	maxSize := sizes[len(sizes)-1]
	ai, err := session.QueryAdapter(a)
	if err != nil {
		return err
	}
	limits, err := c.clientLimits(a, ai, maxSize)
	if err != nil {
		return err
	}
	cl := &perfClient{conns: make([]*perfConn, 0, c.QPs)}
	defer cl.close()
	if cl.q, err = newPerfCQ(ctx, a, ai, limits, c.QPs, c.Blocking); err != nil {
		return err
	}
	named := func(i int, err error) error {
		if c.QPs > 1 {
			return fmt.Errorf("connection %d: %w", i, err)
		}
		return err
	}
	// Every connection is made before any exchanges its windows: the
	// server accepts them all before it serves any.
	for i := range c.QPs {
		pc, err := c.dialConn(ctx, a, cl.q, limits, remote, i, maxSize)
		if err != nil {
			return named(i, err)
		}
		cl.conns = append(cl.conns, pc)
	}
	for i, pc := range cl.conns {
		if err := pc.exchange(maxSize, c.TxDepth); err != nil {
			return named(i, err)
		}
	}
	if c.Test.Lat {
		cl.samples = make([]int64, min(c.Iters*c.QPs, perfMaxSamples))
		if c.duration > 0 {
			cl.samples = make([]int64, perfMaxSamples)
		}
	}
	rep := c.newReport(a.Address(), remote, cl.conns[0], out)
	rep.header()
	if w := c.warmupIters(sizes[0]); w > 0 {
		if _, err := c.runStep(cl, sizes[0], w, 0); err != nil {
			return fmt.Errorf("warm-up: %w", err)
		}
	}
	for k, size := range sizes {
		rep.progress(k, len(sizes), size)
		if err := c.step(cl, size, rep); err != nil {
			rep.clearProgress()
			return fmt.Errorf("size %d: %w", size, err)
		}
	}
	rep.clearProgress()
	// The done messages go first, the disconnections after: nothing is
	// reaped once a connection is torn down (its flushed Receives stay in
	// the queue, which has room for them).
	for _, pc := range cl.conns {
		if err := pc.send(perfMsg{kind: msgDone}); err != nil {
			return err
		}
	}
	for _, pc := range cl.conns {
		for pc.ctrlBusy {
			if err := pc.take(); err != nil {
				return fmt.Errorf("the done message: %w", err)
			}
		}
	}
	for _, pc := range cl.conns {
		if err := pc.s.Conn.Disconnect(ctx); err != nil {
			return fmt.Errorf("disconnecting: %w", err)
		}
	}
	return rep.finish()
}

// perOp is cpu per operation in microseconds (0 without operations).
func perOp(cpu time.Duration, ops int64) float64 {
	if ops <= 0 {
		return 0
	}
	return float64(cpu.Microseconds()) / float64(ops)
}

// step measures messages of size bytes on every connection and adds the
// row to rep.
func (c *Config) step(cl *perfClient, size int, rep *perfReport) error {
	iters := c.Iters
	if c.duration > 0 {
		iters = 0
	}
	dur := time.Duration(c.duration) * time.Second
	cpu, err := c.runStep(cl, size, iters, dur)
	if err != nil {
		return err
	}
	if c.Test.Lat {
		row := latencyRow(c.Test, cl.samples, cl.n, size)
		row.CPUPerOp = perOp(cpu, row.Iterations)
		rep.addLat(row)
	} else {
		row := bandwidthRow(cl.conns, size, c.gbits)
		row.CPUPerOp = perOp(cpu, row.Iterations)
		rep.addBW(row)
	}
	return nil
}

// warmupIters is the number of iterations of size bytes run before the
// first size (-w), per connection as -n.
func (c *Config) warmupIters(size int) int {
	if c.Warmup >= 0 {
		return c.Warmup
	}
	if c.Test.Lat {
		return min(c.Iters, max(1, perfWarmLat/max(1, c.QPs)))
	}
	return min(c.Iters, max(1, perfWarmBytes/size))
}

// runStep makes one step of messages of size bytes over every connection
// (iters of them on each, or for dur) and returns the client's CPU time
// meanwhile. The bw tests keep every connection's pipeline full at once;
// the lat tests make one round trip (or Read) at a time, connection after
// connection.
func (c *Config) runStep(cl *perfClient, size, iters int, dur time.Duration) (time.Duration, error) {
	for _, pc := range cl.conns {
		if err := pc.announce(size, iters); err != nil {
			return 0, err
		}
	}
	for _, pc := range cl.conns {
		if err := pc.ready(size); err != nil {
			return 0, err
		}
	}
	var err error
	cpu0 := timing.CPUTime()
	if c.Test.Lat {
		err = cl.latency(size, iters, dur)
	} else {
		err = cl.stream(size, iters, dur)
	}
	cpu := timing.CPUTime() - cpu0
	if err != nil {
		return 0, err
	}
	for _, pc := range cl.conns {
		if err := pc.endStep(); err != nil {
			return 0, err
		}
	}
	for _, pc := range cl.conns {
		if err := pc.checkEnd(); err != nil {
			return 0, err
		}
	}
	return cpu, nil
}
