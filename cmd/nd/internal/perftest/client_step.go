package perftest

// The client's timed loops of nd perf. None of them allocates unless it
// fails: the records they fill were made when the connection was set up.

import (
	"fmt"
	"time"

	"github.com/godirect/nd"
	"github.com/godirect/nd/cmd/nd/internal/datapath"
	"github.com/godirect/nd/cmd/nd/internal/timing"
)

// announce announces a step of messages of size bytes, iters of them (0:
// by time); ready waits for the server's answer.
func (pc *perfConn) announce(size, iters int) error {
	return pc.send(perfMsg{kind: msgStep, value: uint64(size), iters: uint64(iters), cqMod: uint32(pc.cqMod)})
}

// ready waits until the server is ready for the step of size bytes
// announced.
func (pc *perfConn) ready(size int) error {
	if _, err := pc.await(msgReady); err != nil {
		return err
	}
	if pc.test.op == opSend && pc.test.Lat {
		pc.echoSize = size
	}
	pc.msg = pc.message(size)
	return nil
}

// endStep sends the end marker once every request completed; checkEnd
// checks what the server says it received.
func (pc *perfConn) endStep() error {
	for pc.ops.Pending > 0 {
		if err := pc.take(); err != nil {
			return err
		}
	}
	if err := pc.replies.Repost(); err != nil {
		return err
	}
	pc.echoSize = 0
	if err := pc.send(perfMsg{}); err != nil {
		return fmt.Errorf("the end marker: %w", err)
	}
	return nil
}

// checkEnd waits for the server's answer to the end marker and checks it.
func (pc *perfConn) checkEnd() error {
	m, err := pc.await(msgEnd)
	if err != nil {
		return err
	}
	if pc.test.op == opSend && m.value != uint64(pc.n) {
		return fmt.Errorf("the server received %d messages, the client sent %d", m.value, pc.n)
	}
	return nil
}

// message returns the scatter/gather list of a request of size bytes:
// inline for a Send or Write of at most the endpoint's MaxInlineData.
func (pc *perfConn) message(size int) []nd.SGE {
	region := pc.bufMR
	if pc.test.op != opRead && size <= pc.inline {
		region = nil
	}
	return datapath.SplitSGL(pc.sgl[:], pc.buf[:size], region, 1)
}

// stream keeps up to the pipeline's depth of Sends (within the credits),
// Writes or Reads of size bytes in flight on every connection, recording
// when each was posted and completed, until iters completed on each or dur
// passed. One goroutine posts on all of them and takes the completions of
// all from the one completion queue.
func (cl *perfClient) stream(size, iters int, dur time.Duration) error {
	start := timing.Now()
	stop := start.Add(dur)
	for _, pc := range cl.conns {
		pc.n, pc.sent, pc.more, pc.streaming = 0, 0, true, true
		pc.start, pc.end = start, start
	}
	for left := len(cl.conns); left > 0; {
		for _, pc := range cl.conns {
			if err := pc.post(iters, dur > 0); err != nil {
				return err
			}
		}
		if err := cl.q.take(); err != nil {
			return fmt.Errorf("after %d requests on connection 0: %w", cl.conns[0].sent, err)
		}
		over := dur > 0 && timing.Now() >= stop
		t := timing.Now()
		for _, pc := range cl.conns {
			if over {
				pc.more = false
			}
			if pc.streaming && !pc.more && pc.n == pc.sent {
				pc.end, pc.streaming = t, false
				left--
			}
		}
	}
	return nil
}

// post posts the connection's requests until its pipeline is full (send_bw:
// or its credits run out), or iters were posted (unless timed).
func (pc *perfConn) post(iters int, timed bool) error {
	for pc.more && !pc.ops.Full() && (pc.test.op != opSend || pc.credits > 0) {
		if pc.sent < len(pc.posted) {
			pc.posted[pc.sent] = int64(timing.Since(pc.start))
		}
		var err error
		switch pc.test.op {
		case opSend:
			err = pc.s.EP.Send(pc.ops.Next(), pc.msg, 0)
			pc.credits--
		case opWrite:
			err = pc.s.EP.Write(pc.ops.Next(), pc.msg, pc.remote, 0, 0)
		case opRead:
			err = pc.s.EP.Read(pc.ops.Next(), pc.msg, pc.remote, 0, 0)
		}
		if err != nil {
			return fmt.Errorf("connection %d, request %d: %w", pc.qp, pc.sent, err)
		}
		pc.ops.Posted()
		pc.sent++
		if !timed {
			pc.more = pc.sent < iters
		}
	}
	return nil
}

// latency makes iters round trips (send_lat, write_lat) or Reads
// (read_lat) of size bytes on each connection, or as many as fit in dur,
// one at a time: connection 0's, then 1's, and so on in turn. It records
// the time of each.
func (cl *perfClient) latency(size, iters int, dur time.Duration) error {
	for _, pc := range cl.conns {
		pc.n, pc.pings = 0, 0
	}
	total := iters * len(cl.conns)
	cl.start = timing.Now()
	// One reading of the clock per iteration, right after its post (each
	// operation's postedAt), while the peer answers: each sample runs from
	// one iteration's post to the next one's, the last one's to the end of
	// its round trip. Read between an answer's arrival and the next post,
	// the clock would lengthen every round trip by its own cost (perftest
	// stamps its posts so too).
	var last time.Duration // the last iteration's post, from cl.start
	i, k := 0, 0           // the iteration, and its connection
	for ; dur > 0 && last < dur || dur == 0 && i < total; i++ {
		pc := cl.conns[k]
		if k++; k == len(cl.conns) {
			k = 0
		}
		var err error
		switch pc.test.op {
		case opSend:
			err = pc.ping(pc.msg)
		case opWrite:
			err = pc.writeRound(pc.msg, size)
		case opRead:
			err = pc.readOnce(pc.msg)
		}
		if err != nil {
			if len(cl.conns) > 1 {
				return fmt.Errorf("iteration %d, connection %d: %w", i, pc.qp, err)
			}
			return fmt.Errorf("iteration %d: %w", i, err)
		}
		t := pc.postedAt.Sub(cl.start)
		cl.sample(i-1, t-last)
		last = t
	}
	end := timing.Since(cl.start)
	cl.sample(i-1, end-last)
	cl.n = i
	cl.end = cl.start.Add(end)
	for _, pc := range cl.conns {
		if pc.test.op == opSend {
			pc.n = pc.pings // the signaled Sends' completions counted only some
		}
	}
	return nil
}

// sample records iteration i's time d, unless i is before the first
// iteration or past the samples kept (-D).
func (cl *perfClient) sample(i int, d time.Duration) {
	if i >= 0 && i < len(cl.samples) {
		cl.samples[i] = int64(d)
	}
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
		res, flags = pc.ops.Next(), 0
	}
	// Silent Sends not yet acknowledged may fill the queue: polling
	// moves their acknowledgments. The function is made once: the loop
	// allocates nothing.
	if pc.pollRoom == nil {
		pc.pollRoom = pc.q.poll
	}
	if err := datapath.SendWhenRoom(pc.ctx, pc.s.EP, res, sgl, flags, pc.pollRoom); err != nil {
		return fmt.Errorf("posting a Send: %w", err)
	}
	pc.postedAt = timing.Now()
	if signaled {
		pc.ops.Posted()
	}
	if err := pc.replies.Repost(); err != nil {
		return err
	}
	pc.credits--
	for pc.echoes == 0 || pc.ops.Pending > 0 {
		if err := pc.take(); err != nil {
			return err
		}
	}
	pc.echoes--
	return nil
}

// readOnce makes one RDMA Read and waits for it.
func (pc *perfConn) readOnce(sgl []nd.SGE) error {
	if err := pc.s.EP.Read(pc.ops.Next(), sgl, pc.remote, 0, 0); err != nil {
		return fmt.Errorf("posting a Read: %w", err)
	}
	pc.postedAt = timing.Now()
	pc.ops.Posted()
	for pc.ops.Pending > 0 {
		if err := pc.take(); err != nil {
			return err
		}
	}
	return nil
}

// writeRound Writes a message whose last byte is this round's into the
// server's window, takes the Write's completion, and spins on the last
// byte of the client's window until the server's answer is there. As
// perftest's write_lat, it takes the completion while the server answers,
// not after the answer came. It looks at the completion queue every
// datapath.YieldEvery spins, which moves a provider's bytes and stops the
// loop when the connection fails.
func (pc *perfConn) writeRound(sgl []nd.SGE, size int) error {
	last := size - 1
	ping, pong := datapath.Stamps(pc.round)
	pc.buf[last] = ping
	if err := pc.s.EP.Write(pc.ops.Next(), sgl, pc.remote, 0, 0); err != nil {
		return fmt.Errorf("posting a Write: %w", err)
	}
	pc.postedAt = timing.Now()
	pc.ops.Posted()
	for pc.ops.Pending > 0 { // the next round rewrites the Write's source
		if err := pc.take(); err != nil {
			return err
		}
	}
	var pace datapath.Pacer
	for spins := 1; datapath.LoadByte(pc.win, last) != pong; spins++ {
		if spins%datapath.YieldEvery != 0 {
			continue
		}
		pace.Idle()
		if err := pc.q.poll(); err != nil {
			return err
		}
		if spins%datapath.CheckEvery == 0 {
			if err := pc.ctx.Err(); err != nil {
				return fmt.Errorf("waiting for the server's Write: %w", err)
			}
		}
	}
	pc.round++
	return nil
}
