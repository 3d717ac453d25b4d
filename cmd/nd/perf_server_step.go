package main

// The server's part in one step of nd perf: taking send_bw's messages and
// returning credits, echoing send_lat's, answering write_lat's Writes, or
// waiting while the client Writes or Reads. Each returns at the client's
// end marker (a zero-byte Send) and allocates nothing unless it fails.

import (
	"fmt"
	"runtime"

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
		end := false
		for _, r := range done {
			switch {
			case sv.sends.owns(r):
				if err := sv.sends.complete(); err != nil {
					return got, fmt.Errorf("a credit message's Send completed with %w", err)
				}
			case sv.recv.owns(r) && !end:
				n, err := sv.recv.complete(nil)
				if err != nil {
					return got, fmt.Errorf("message %d: %w", got, err)
				}
				sv.owed++
				if n == 0 {
					end = true
				} else {
					got++
				}
			default:
				return got, errUnexpected
			}
		}
		if end {
			return got, nil
		}
		if sv.owed >= sv.batch && !sv.sends.full() {
			if err := sv.post(msgCredit, 0, windowMsg{}); err != nil {
				return got, err
			}
		}
	}
}

// echo sends each of send_lat's messages back, as many bytes as arrived.
// The echo returns the message's credit.
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
		// The end marker may come in one batch with the last echo's Send
		// completion (from the other queue): take the whole batch before
		// returning, or that completion is lost to the next step.
		end := false
		for _, r := range done {
			switch {
			case sv.sends.owns(r):
				if err := sv.sends.complete(); err != nil {
					return got, fmt.Errorf("an echo's Send completed with %w", err)
				}
			case sv.recv.owns(r) && !end:
				n, err := sv.recv.complete(nil)
				if err != nil {
					return got, fmt.Errorf("message %d: %w", got, err)
				}
				if n == 0 {
					sv.owed++
					end = true
					continue
				}
				if n != size {
					return got, fmt.Errorf("message %d has %d bytes, want %d", got, n, size)
				}
				if err := sv.waitSlot(); err != nil {
					return got, err
				}
				if err := sv.s.ep.Send(sv.sends.next(), splitSGL(sv.sgl[:], sv.src[:n], region, 1), 0); err != nil {
					return got, fmt.Errorf("message %d: Send of the echo: %w", got, err)
				}
				sv.sends.posted()
				got++
			default:
				return got, errUnexpected
			}
		}
		if end {
			return got, nil
		}
	}
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
		for spins := 1; loadByte(sv.win, last) != ping; spins++ {
			if spins%yieldEvery != 0 {
				continue
			}
			runtime.Gosched()
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
			if _, err := sv.takeEnd(done); err != nil {
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
func (sv *perfServed) takeEnd(done []*nd.Result) (end bool, err error) {
	for _, r := range done {
		switch {
		case sv.sends.owns(r):
			if err := sv.sends.complete(); err != nil {
				return end, fmt.Errorf("a Send or Write completed with %w", err)
			}
		case sv.recv.owns(r) && !end:
			n, err := sv.recv.complete(nil)
			if err != nil {
				return end, err
			}
			if n != 0 {
				return end, fmt.Errorf("a message of %d bytes during the test; only the end marker was due", n)
			}
			sv.owed++
			end = true
		default:
			return end, errUnexpected
		}
	}
	return end, nil
}
