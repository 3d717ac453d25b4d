package main

// The client of nd perf: connects the -q connections, runs each size as a
// step on all of them at once, and reports.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"sync"
	"time"

	"github.com/godirect/nd"
)

// drive implements dataTool: it connects from adapter a to the server at
// remote, measures every size, reports to out and disconnects.
func (c *perfConfig) drive(ctx context.Context, a nd.Adapter, remote netip.AddrPort, out io.Writer) error {
	sizes := c.sizes()
	ai, err := queryAdapter(a)
	if err != nil {
		return err
	}
	conns := make([]*perfConn, 0, c.qps)
	defer func() {
		for _, pc := range conns {
			pc.close()
		}
	}()
	for i := range c.qps {
		pc, err := c.dialConn(ctx, a, ai, remote, i, sizes[len(sizes)-1])
		if err != nil {
			if c.qps > 1 {
				err = fmt.Errorf("connection %d: %w", i, err)
			}
			return err
		}
		conns = append(conns, pc)
	}
	rep := c.newReport(a.Address(), remote, conns[0], out)
	rep.header()
	if w := c.warmupIters(sizes[0]); w > 0 {
		if _, err := c.runStep(conns, sizes[0], w, 0); err != nil {
			return fmt.Errorf("warm-up: %w", err)
		}
	}
	for k, size := range sizes {
		rep.progress(k, len(sizes), size)
		if err := c.step(conns, size, rep); err != nil {
			rep.clearProgress()
			return fmt.Errorf("size %d: %w", size, err)
		}
	}
	rep.clearProgress()
	for _, pc := range conns {
		if err := pc.send(perfMsg{kind: msgDone}); err != nil {
			return err
		}
		for pc.ctrlBusy {
			if err := pc.take(); err != nil {
				return fmt.Errorf("the done message: %w", err)
			}
		}
		if err := pc.s.conn.Disconnect(ctx); err != nil {
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

// step measures messages of size bytes on every connection at once and
// adds the row to rep.
func (c *perfConfig) step(conns []*perfConn, size int, rep *perfReport) error {
	iters := c.iters
	if c.duration > 0 {
		iters = 0
	}
	dur := time.Duration(c.duration) * time.Second
	cpu, err := c.runStep(conns, size, iters, dur)
	if err != nil {
		return err
	}
	if c.test.lat {
		row := latencyRow(conns[0], size)
		row.CPUPerOp = perOp(cpu, row.Iterations)
		rep.addLat(row)
	} else {
		row := bandwidthRow(conns, size, c.gbits)
		row.CPUPerOp = perOp(cpu, row.Iterations)
		rep.addBW(row)
	}
	return nil
}

// warmupIters is the number of iterations of size bytes run before the
// first size (-w).
func (c *perfConfig) warmupIters(size int) int {
	if c.warmup >= 0 {
		return c.warmup
	}
	if c.test.lat {
		return min(c.iters, perfWarmLat)
	}
	return min(c.iters, max(1, perfWarmBytes/size))
}

// runStep makes one step of messages of size bytes on every connection at
// once (iters of them, or for dur) and returns the client's CPU time
// meanwhile.
func (c *perfConfig) runStep(conns []*perfConn, size, iters int, dur time.Duration) (time.Duration, error) {
	for _, pc := range conns {
		if err := pc.begin(size, iters); err != nil {
			return 0, err
		}
	}
	var err error
	cpu0 := cpuTime()
	if len(conns) == 1 {
		err = conns[0].measure(size, iters, dur)
	} else {
		// The connections start together once every server side is ready.
		errs := make([]error, len(conns))
		start := make(chan struct{})
		var wg sync.WaitGroup
		for i, pc := range conns {
			wg.Go(func() {
				<-start
				if err := pc.measure(size, iters, dur); err != nil {
					errs[i] = fmt.Errorf("connection %d: %w", i, err)
				}
			})
		}
		close(start)
		wg.Wait()
		err = errors.Join(errs...)
	}
	cpu := cpuTime() - cpu0
	if err != nil {
		return 0, err
	}
	for _, pc := range conns {
		if err := pc.finish(); err != nil {
			return 0, err
		}
	}
	return cpu, nil
}
