package perftest

// The server's part in the steps of nd perf, for every connection from one
// goroutine: taking send_bw's messages and returning credits, echoing
// send_lat's, answering write_lat's Writes, or waiting while the client
// Writes or Reads. A connection's step ends at the client's end marker (a
// zero-byte Send). Nothing here allocates unless it fails.

import (
	"errors"
	"fmt"

	"github.com/godirect/nd"
	"github.com/godirect/nd/cmd/nd/internal/datapath"
)

// run serves every connection until each client said done. It waits for
// completions by polling (or Notify with -b) while the client's messages
// are to be answered at once (send_bw, send_lat), by spinning on the
// window of the connection whose turn it is (write_lat), by polling while
// something waits for room in a send queue, and by blocking in Notify
// otherwise (control messages, and the steps in which the client Writes or
// Reads and the server only waits for the end marker).
func (srv *perfServer) run() error {
	for _, sv := range srv.conns {
		if err := sv.start(); err != nil {
			return fmt.Errorf("connection %d: %w", sv.qp, err)
		}
	}
	var pace datapath.Pacer
	for spins := 1; srv.done < len(srv.conns); spins++ {
		var err error
		switch {
		case srv.pongs && srv.conns[srv.rr].inStep:
			var wrote bool
			if wrote, err = srv.pong(); err != nil || wrote {
				break
			}
			if spins%datapath.YieldEvery == 0 {
				pace.Idle()
				err = srv.q.poll()
			}
		case len(srv.owing) > 0:
			err = srv.q.poll()
			pace.Idle()
		case srv.stepping > 0 && srv.test.op == opSend:
			err = srv.q.take()
		default:
			err = srv.q.wait()
		}
		if err == nil && len(srv.owing) > 0 {
			err = srv.settle()
		}
		if err != nil {
			return err
		}
		if spins%datapath.CheckEvery == 0 {
			if err := srv.ctx.Err(); err != nil {
				return err
			}
		}
	}
	return nil
}

// stepMessage takes the client's message of r during a step: the end
// marker, which the server answers with the messages it received or
// answered; send_bw's messages, whose Receives are reposted at once and
// whose credits return whenever half of them are owed; send_lat's, each
// echoed with as many bytes before its Receive is reposted (the client has
// one message in flight, the other Receives stay posted).
func (sv *perfServed) stepMessage(r *nd.Result) error {
	n, err := sv.recv.Take(nil)
	if err != nil {
		return err
	}
	switch {
	case n == 0:
		if err := sv.recv.Repost(); err != nil {
			return err
		}
		sv.owed++
		sv.inStep = false
		sv.srv.stepping--
		return sv.reply(msgEnd, uint64(sv.got), datapath.WindowMsg{})
	case sv.test.op == opSend && sv.test.Lat:
		if n != sv.size {
			return fmt.Errorf("message %d has %d bytes, want %d", sv.got, n, sv.size)
		}
		sv.got++
		if sv.echoOwed > 0 {
			sv.echoOwed++
		} else if sent, err := sv.sendEcho(); err != nil {
			return fmt.Errorf("message %d: Send of the echo: %w", sv.got, err)
		} else if !sent {
			sv.echoOwed++
			sv.srv.owe(sv)
		}
		return sv.recv.Repost()
	case sv.test.op == opSend:
		sv.got++
		sv.owed++
		if err := sv.recv.Repost(); err != nil {
			return err
		}
		return sv.returnCredits()
	default:
		return fmt.Errorf("a message of %d bytes during the test; only the end marker was due", n)
	}
}

// returnCredits sends send_bw's credits in a step once half of them are
// owed and a Send slot is free (else a Send's completion will).
func (sv *perfServed) returnCredits() error {
	if !sv.inStep || sv.test.op != opSend || sv.test.Lat || sv.owed < sv.batch || sv.sends.Full() || sv.replyOwed {
		return nil
	}
	return sv.post(msgCredit, 0, datapath.WindowMsg{})
}

// sendEcho sends an echo of the step's size and reports whether it went:
// it waits for room when the send queue is full (silent echoes the client
// has not acknowledged yet) or, for one that asks for a completion, when
// no Send slot is free. As the client's pings, only every cqMod-th asks
// for a completion; the others complete silently (a failed one with
// sv.silent).
func (sv *perfServed) sendEcho() (bool, error) {
	signaled := (sv.echoes+1)%sv.cqMod == 0
	res, flags := &sv.silent, nd.FlagSilentSuccess
	if signaled {
		if sv.sends.Full() {
			return false, nil
		}
		res, flags = sv.sends.Next(), 0
	}
	err := sv.s.EP.Send(res, sv.data, flags)
	if errors.Is(err, nd.ErrNoMoreEntries) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	sv.echoes++
	if signaled {
		sv.sends.Posted()
	}
	return true, nil
}

// pong answers write_lat's Write on the connection whose turn it is, if
// it is there: the last byte of its window is the round's. It Writes the
// server's answer into the client's window, takes the Write's completion
// while the client answers (as perftest's write_lat), and passes the turn
// on. The Write's source is rewritten: while an earlier Send of that
// connection is in flight, pong polls instead.
func (srv *perfServer) pong() (bool, error) {
	sv := srv.conns[srv.rr]
	last := sv.size - 1
	ping, pong := datapath.Stamps(sv.round)
	if datapath.LoadByte(sv.win, last) != ping {
		return false, nil
	}
	if sv.sends.Pending > 0 {
		return false, srv.q.poll()
	}
	sv.src[last] = pong
	if err := sv.s.EP.Write(sv.sends.Next(), sv.data, sv.peer, 0, 0); err != nil {
		return false, fmt.Errorf("connection %d, round trip %d: Write: %w", sv.qp, sv.got, err)
	}
	sv.sends.Posted()
	sv.round++
	sv.got++
	if srv.rr++; srv.rr == len(srv.conns) {
		srv.rr = 0
	}
	// The completions taken may include the client's end marker and its
	// next step: the round is counted and the turn passed on before.
	for sv.sends.Pending > 0 {
		if err := srv.q.take(); err != nil {
			return false, fmt.Errorf("connection %d, round trip %d: %w", sv.qp, sv.got, err)
		}
	}
	return true, nil
}
