package main

// The server's part in one step of nd perf: taking send_bw's messages and
// returning credits, echoing send_lat's, answering write_lat's Writes, or
// waiting while the client Writes or Reads. Each returns at the client's
// end marker (a zero-byte Send) and allocates nothing unless it fails.

import (
	"fmt"

	"github.com/godirect/nd"
)

// step serves one step of messages of size bytes and returns the number
// of messages it received or answered.
func (sv *perfServed) step(size int) (int64, error) {
	switch {
	case sv.test.op == opSend && sv.test.lat:
		return sv.echo(size)
	case sv.test.op == opSend:
		return sv.sink()
	case sv.test.op == opWrite && sv.test.lat:
		return sv.pong(size)
	default:
		return 0, sv.await()
	}
}

// sink takes send_bw's messages, reposting each Receive at once, and
// returns credits whenever half of them are owed.
func (sv *perfServed) sink() (int64, error) {
	var got int64
	for {
		done, err := sv.reaper.next()
		if err != nil {
			return got, fmt.Errorf("after %d messages: %w", got, err)
		}
		end, err := sv.drain(done, true, func(int) error {
			sv.owed++
			got++
			return nil
		})
		if err != nil || end {
			return got, err
		}
		if sv.owed >= sv.batch && !sv.sends.full() {
			if err := sv.post(msgCredit, 0, windowMsg{}); err != nil {
				return got, err
			}
		}
	}
}

// echo sends each of send_lat's messages back, as many bytes as arrived.
// The echo returns the message's credit. A batch of completions is taken
// whole before any echo waits for a free Send (waitSlot reaps into the
// same slice).
func (sv *perfServed) echo(size int) (int64, error) {
	region := sv.srcMR
	if size <= sv.inline {
		region = nil
	}
	var got int64
	for {
		done, err := sv.reaper.next()
		if err != nil {
			return got, fmt.Errorf("after %d messages: %w", got, err)
		}
		arrived := 0
		// The echoes go first, the Receives are reposted after them: the
		// client has one message in flight and the others stay posted.
		end, err := sv.drain(done, false, func(n int) error {
			if n != size {
				return fmt.Errorf("message %d has %d bytes, want %d", got+int64(arrived), n, size)
			}
			arrived++
			return nil
		})
		if err != nil {
			return got, err
		}
		for range arrived {
			if err := sv.sendEcho(splitSGL(sv.sgl[:], sv.src[:size], region, 1)); err != nil {
				return got, fmt.Errorf("message %d: Send of the echo: %w", got, err)
			}
			got++
		}
		if err := sv.recv.repost(); err != nil {
			return got, err
		}
		if end {
			return got, nil
		}
	}
}

// sendEcho sends an echo. As the client's pings, only every cqMod-th
// asks for a completion; the others complete silently (a failed one with
// sv.silent), and while those not yet acknowledged fill the queue, it
// polls. No message of the client's can arrive meanwhile: the client waits
// for this echo.
func (sv *perfServed) sendEcho(sgl []nd.SGE) error {
	sv.echoes++
	res, flags := &sv.silent, nd.FlagSilentSuccess
	if sv.echoes%sv.cqMod == 0 {
		if err := sv.waitSlot(); err != nil {
			return err
		}
		res, flags = sv.sends.next(), 0
	}
	if sv.pollRoom == nil { // made once: the loop allocates nothing
		sv.pollRoom = func() error {
			_, err := sv.drain(sv.reaper.poll(), true, noMessage)
			return err
		}
	}
	if err := sendWhenRoom(sv.ctx, sv.s.ep, res, sgl, flags, sv.pollRoom); err != nil {
		return err
	}
	if flags == 0 {
		sv.sends.posted()
	}
	return nil
}

// drain takes a batch of completions: the outbound requests', the
// client's messages (msg is called with each one's length) and the end
// marker, which it reports. The end marker may come in one batch with an
// outbound completion (from the other queue): the whole batch is taken, or
// that completion would be lost to the next step. Anything else, or a
// message after the end marker, is an error. The Receives of the client's
// messages are reposted at once if repost, else by the caller
// (sv.recv.repost).
func (sv *perfServed) drain(done []*nd.Result, repost bool, msg func(n int) error) (end bool, err error) {
	for _, r := range done {
		switch {
		case sv.sends.owns(r):
			if err := sv.sends.complete(); err != nil {
				return end, fmt.Errorf("a Send or Write completed with %w", err)
			}
		case r == &sv.silent:
			// Silent echoes complete only when they fail.
			return end, fmt.Errorf("an echo's Send completed with %w", r.Status.Err())
		case sv.recv.owns(r) && !end:
			n, err := sv.recv.take(nil)
			if err == nil && repost {
				err = sv.recv.repost()
			}
			if err != nil {
				return end, err
			}
			if n == 0 {
				sv.owed++
				end = true
			} else if err := msg(n); err != nil {
				return end, err
			}
		default:
			return end, errUnexpected
		}
	}
	return end, nil
}

// pong answers write_lat's Writes: it spins on the last byte of its window
// until the client's round is there, and Writes its own into the client's
// window. It looks at the completion queue every yieldEvery spins, for the
// end marker and for a failure.
func (sv *perfServed) pong(size int) (int64, error) {
	region := sv.srcMR
	if size <= sv.inline {
		region = nil
	}
	last := size - 1
	var got int64
	for {
		ping, pong := stamps(sv.round)
		var pace pacer
		for spins := 1; loadByte(sv.win, last) != ping; spins++ {
			if pace.idle(); spins%yieldEvery != 0 {
				continue
			}
			end, err := sv.takeEnd(sv.reaper.poll())
			if err != nil || end {
				return got, err
			}
			if spins%checkEvery == 0 {
				if err := sv.ctx.Err(); err != nil {
					return got, fmt.Errorf("round trip %d: waiting for the client's Write: %w", got, err)
				}
			}
		}
		// The source of the previous Write is rewritten: it must be done.
		for sv.sends.pending > 0 {
			done, err := sv.reaper.next()
			if err != nil {
				return got, err
			}
			if end, err := sv.takeEnd(done); err != nil || end {
				return got, err
			}
		}
		sv.src[last] = pong
		if err := sv.s.ep.Write(sv.sends.next(), splitSGL(sv.sgl[:], sv.src[:size], region, 1), sv.peer, 0, 0); err != nil {
			return got, fmt.Errorf("round trip %d: Write: %w", got, err)
		}
		sv.sends.posted()
		sv.round++
		got++
	}
}

// await waits for the end marker while the client Writes into or Reads
// from the window.
func (sv *perfServed) await() error {
	for {
		done, err := sv.waiter.next()
		if err != nil {
			return err
		}
		if end, err := sv.takeEnd(done); err != nil || end {
			return err
		}
	}
}

// takeEnd takes outbound completions and the end marker, and reports
// whether the end marker was among done. Any other message is an error.
func (sv *perfServed) takeEnd(done []*nd.Result) (bool, error) {
	return sv.drain(done, true, noMessage)
}

// noMessage refuses a message where only the end marker was due.
func noMessage(n int) error {
	return fmt.Errorf("a message of %d bytes during the test; only the end marker was due", n)
}
