package main

// The client's timed loops of nd perf. None of them allocates unless it
// fails: the records they fill were made when the connection was set up.

import (
	"fmt"
	"time"

	"github.com/godirect/nd"
)

// begin announces a step of messages of size bytes, iters of them (0: by
// time), and waits until the server is ready.
func (pc *perfConn) begin(size, iters int) error {
	if err := pc.send(perfMsg{kind: msgStep, value: uint64(size), iters: uint64(iters), cqMod: uint32(pc.cqMod)}); err != nil {
		return err
	}
	if _, err := pc.await(msgReady); err != nil {
		return err
	}
	if pc.test.op == opSend && pc.test.lat {
		pc.echoSize = size
	}
	return nil
}

// finish ends the step with the end marker once every request completed,
// and checks what the server says it received.
func (pc *perfConn) finish() error {
	for pc.ops.pending > 0 {
		if err := pc.take(); err != nil {
			return err
		}
	}
	if err := pc.replies.repost(); err != nil {
		return err
	}
	pc.echoSize = 0
	if err := pc.send(perfMsg{}); err != nil {
		return fmt.Errorf("the end marker: %w", err)
	}
	m, err := pc.await(msgEnd)
	if err != nil {
		return err
	}
	if pc.test.op == opSend && m.value != uint64(pc.n) {
		return fmt.Errorf("the server received %d messages, the client sent %d", m.value, pc.n)
	}
	return nil
}

// measure runs the step: iters requests or iterations, or as many as fit
// in dur if it is not 0.
func (pc *perfConn) measure(size, iters int, dur time.Duration) error {
	if pc.test.lat {
		return pc.latency(size, iters, dur)
	}
	return pc.stream(size, iters, dur)
}

// message returns the scatter/gather list of a request of size bytes:
// inline for a Send or Write of at most the endpoint's MaxInlineData.
func (pc *perfConn) message(size int) []nd.SGE {
	region := pc.bufMR
	if pc.test.op != opRead && size <= pc.inline {
		region = nil
	}
	return splitSGL(pc.sgl[:], pc.buf[:size], region, 1)
}

// stream keeps up to the pipeline's depth of Sends (within the credits),
// Writes or Reads of size bytes in flight, recording when each was posted
// and completed, until iters completed or dur passed.
func (pc *perfConn) stream(size, iters int, dur time.Duration) error {
	sgl := pc.message(size)
	pc.n = 0
	posted, more := 0, true
	pc.start = now()
	stop := pc.start.add(dur)
	for more || pc.n < posted {
		for more && !pc.ops.full() && (pc.test.op != opSend || pc.credits > 0) {
			if posted < len(pc.posted) {
				pc.posted[posted] = int64(since(pc.start))
			}
			var err error
			switch pc.test.op {
			case opSend:
				err = pc.s.ep.Send(pc.ops.next(), sgl, 0)
				pc.credits--
			case opWrite:
				err = pc.s.ep.Write(pc.ops.next(), sgl, pc.remote, 0, 0)
			case opRead:
				err = pc.s.ep.Read(pc.ops.next(), sgl, pc.remote, 0, 0)
			}
			if err != nil {
				return fmt.Errorf("request %d: %w", posted, err)
			}
			pc.ops.posted()
			posted++
			if dur == 0 {
				more = posted < iters
			}
		}
		if err := pc.take(); err != nil {
			return fmt.Errorf("after %d requests: %w", posted, err)
		}
		if dur > 0 {
			more = now() < stop
		}
	}
	pc.end = now()
	return nil
}

// latency makes iters round trips (send_lat, write_lat) or Reads
// (read_lat) of size bytes one after the other, or as many as fit in dur,
// recording the time of each.
func (pc *perfConn) latency(size, iters int, dur time.Duration) error {
	sgl := pc.message(size)
	pc.n, pc.pings = 0, 0
	pc.start = now()
	// One reading of the clock per iteration: its end is the next one's start.
	var t0 time.Duration
	for i := 0; ; i++ {
		if dur > 0 && t0 >= dur || dur == 0 && i == iters {
			break
		}
		var err error
		switch pc.test.op {
		case opSend:
			err = pc.ping(sgl)
		case opWrite:
			err = pc.writeRound(sgl, size)
		case opRead:
			err = pc.readOnce(sgl)
		}
		if err != nil {
			return fmt.Errorf("iteration %d: %w", i, err)
		}
		t1 := since(pc.start)
		if i < len(pc.samples) {
			pc.samples[i] = int64(t1 - t0)
		}
		t0 = t1
	}
	pc.end = pc.start.add(t0)
	if pc.test.op == opSend {
		pc.n = pc.pings // the signaled Sends' completions counted only some
	}
	return nil
}

// ping sends a message and waits for its echo. As perftest does, only
// every cqMod-th Send of the step asks for a completion, and ping waits for
// that one too; the others complete silently (a failed one still
// completes, with silentRes). pc.pings counts the Sends.
func (pc *perfConn) ping(sgl []nd.SGE) error {
	for pc.credits == 0 {
		if err := pc.take(); err != nil {
			return err
		}
	}
	pc.pings++
	signaled := pc.pings%pc.cqMod == 0
	res, flags := &pc.silentRes, nd.FlagSilentSuccess
	if signaled {
		res, flags = pc.ops.next(), 0
	}
	// Silent Sends not yet acknowledged may fill the queue: polling
	// moves their acknowledgments. The function is made once: the loop
	// allocates nothing.
	if pc.pollRoom == nil {
		pc.pollRoom = func() error { return pc.handle(pc.reaper.poll()) }
	}
	if err := sendWhenRoom(pc.ctx, pc.s.ep, res, sgl, flags, pc.pollRoom); err != nil {
		return fmt.Errorf("posting a Send: %w", err)
	}
	if signaled {
		pc.ops.posted()
	}
	if err := pc.replies.repost(); err != nil {
		return err
	}
	pc.credits--
	for pc.echoes == 0 || pc.ops.pending > 0 {
		if err := pc.take(); err != nil {
			return err
		}
	}
	pc.echoes--
	return nil
}

// readOnce makes one RDMA Read and waits for it.
func (pc *perfConn) readOnce(sgl []nd.SGE) error {
	if err := pc.s.ep.Read(pc.ops.next(), sgl, pc.remote, 0, 0); err != nil {
		return fmt.Errorf("posting a Read: %w", err)
	}
	pc.ops.posted()
	for pc.ops.pending > 0 {
		if err := pc.take(); err != nil {
			return err
		}
	}
	return nil
}

// writeRound Writes a message whose last byte is this round's into the
// server's window and spins on the last byte of the client's window until
// the server's answer is there. It looks at the completion queue every
// yieldEvery spins, so that a failed Write stops it.
func (pc *perfConn) writeRound(sgl []nd.SGE, size int) error {
	last := size - 1
	ping, pong := stamps(pc.round)
	// The Write's source is rewritten: the previous one must be done.
	for pc.ops.pending > 0 {
		if err := pc.take(); err != nil {
			return err
		}
	}
	pc.buf[last] = ping
	if err := pc.s.ep.Write(pc.ops.next(), sgl, pc.remote, 0, 0); err != nil {
		return fmt.Errorf("posting a Write: %w", err)
	}
	pc.ops.posted()
	var pace pacer
	for spins := 1; loadByte(pc.win, last) != pong; spins++ {
		if pace.idle(); spins%yieldEvery != 0 {
			continue
		}
		if err := pc.handle(pc.reaper.poll()); err != nil {
			return err
		}
		if spins%checkEvery == 0 {
			if err := pc.ctx.Err(); err != nil {
				return fmt.Errorf("waiting for the server's Write: %w", err)
			}
		}
	}
	pc.round++
	return nil
}
