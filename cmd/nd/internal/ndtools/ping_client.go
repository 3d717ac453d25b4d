package ndtools

// The active side of nd ping: streams Sends within its credits and the
// pipeline depth, and ends each size with a sync the server acknowledges.

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net/netip"

	"github.com/godirect/nd"
	"github.com/godirect/nd/cmd/nd/internal/datapath"
	"github.com/godirect/nd/cmd/nd/internal/session"
	"github.com/godirect/nd/cmd/nd/internal/timing"
)

// streamer is the client's data path.
type streamer struct {
	ep      nd.Endpoint
	reaper  *datapath.Reaper
	replies *datapath.ReceiveRing
	reply   [pingReplySize]byte // the reply being parsed
	sends   *datapath.RequestRing
	credits int
	sendBuf []byte
	sendMR  nd.MemoryRegion
	sgl     []nd.SGE
	sges    int
	inline  int
}

// Drive connects from adapter a to the server at remote, runs the warm-up
// and the sweep, prints the table to out and disconnects.
func (c *pingConfig) Drive(ctx context.Context, a nd.Adapter, remote netip.AddrPort, out io.Writer) error {
	steps := timing.Sweep(int(c.MaxSize), timing.OneWayIterations, c.Iters)
	warm := timing.Warmups(c.Iters)
	// Every size, and the warm-up, ends with a sync message.
	messages := int64(warm) + timing.TotalIters(steps) + int64(len(steps)) + 1
	maxSize := steps[len(steps)-1].Size

	ai, err := session.QueryAdapter(a)
	if err != nil {
		return err
	}
	limits := nd.EndpointLimits{
		InboundEntries:  pingReplies,
		OutboundEntries: c.Depth,
		InboundSGE:      1,
		OutboundSGE:     c.SGEs,
	}
	if err := c.CheckQueues(ai, limits); err != nil {
		return fmt.Errorf("adapter %s: %w", a.Address(), err)
	}
	if err := session.CheckSize(ai, maxSize); err != nil {
		return fmt.Errorf("adapter %s: %w", a.Address(), err)
	}
	s, err := session.New(a, nil, limits)
	if err != nil {
		return err
	}
	defer s.Close()
	sendBuf, sendMR, err := datapath.Registered(ctx, a, maxSize)
	if err != nil {
		return err
	}
	replyBuf, replyMR, err := datapath.Registered(ctx, a, pingReplies*pingReplySize)
	if err != nil {
		datapath.Deregister(ctx, a, sendMR)
		return err
	}
	defer datapath.Deregister(ctx, a, sendMR, replyMR)
	replies, err := datapath.NewReceiveSlots(s.EP, replyBuf, replyMR, pingReplies)
	if err != nil {
		return err
	}
	credits := 0
	checkWelcome := func(b []byte) error {
		if err := session.PingGreeting.CheckWelcome(b); err != nil {
			return err
		}
		if len(b) < session.WelcomeSize+4 {
			return fmt.Errorf("the server's welcome has no credits (private data %q)", b)
		}
		if credits = int(binary.BigEndian.Uint32(b[session.WelcomeSize:])); credits < 1 {
			return fmt.Errorf("the server grants no credits")
		}
		return nil
	}
	if err := s.Dial(ctx, remote, session.PingGreeting.Hello(session.Hello{MaxSize: maxSize, Count: messages}), checkWelcome); err != nil {
		return err
	}

	st := &streamer{
		ep:      s.EP,
		reaper:  datapath.NewReaper(ctx, s.CQ, c.Blocking, pingReplies+c.Depth),
		replies: replies,
		sends:   datapath.NewRequestRing(c.Depth),
		credits: credits,
		sendBuf: sendBuf,
		sendMR:  sendMR,
		sgl:     make([]nd.SGE, c.SGEs),
		sges:    c.SGEs,
		inline:  s.EP.MaxInlineData(),
	}
	if err := timing.MeasureSweep(out, warm, steps, 1, 1, nil, st.stream); err != nil {
		return err
	}
	if err := s.Conn.Disconnect(ctx); err != nil {
		return fmt.Errorf("disconnecting: %w", err)
	}
	return nil
}

// stream sends n messages of size bytes and a sync, and returns when the
// server acknowledged the sync and every Send completed. A Send is inline
// when size is at most the endpoint's MaxInlineData. It allocates nothing
// unless it fails.
func (st *streamer) stream(size, n int) error {
	sgl := datapath.SendSGL(st.sgl, st.sendBuf[:size], st.sendMR, st.sges, st.inline)
	sent, synced, acked := 0, false, false
	for !acked || st.sends.Pending > 0 {
		for !synced && st.credits > 0 && !st.sends.Full() {
			msg := sgl
			if sent == n {
				msg, synced = nil, true // the sync: a zero-byte Send
			}
			if err := st.ep.Send(st.sends.Next(), msg, 0); err != nil {
				return fmt.Errorf("message %d: Send: %w", sent, err)
			}
			st.sends.Posted()
			st.credits--
			if !synced {
				sent++
			}
		}
		done, err := st.reaper.Next()
		if err != nil {
			return fmt.Errorf("after %d messages: %w", sent, err)
		}
		for _, r := range done {
			switch {
			case st.sends.Owns(r):
				if err := st.sends.Complete(); err != nil {
					return fmt.Errorf("after %d messages: Send completed with %w", sent, err)
				}
			case st.replies.Owns(r):
				got, err := st.replies.Complete(st.reply[:])
				if err != nil {
					return fmt.Errorf("after %d messages: %w", sent, err)
				}
				rep, err := parsePingReply(st.reply[:], got)
				if err != nil {
					return err
				}
				st.credits += int(rep.credits)
				if rep.syncs > 1 || rep.syncs == 1 && (!synced || acked) {
					return fmt.Errorf("the server acknowledges a sync that was not sent")
				}
				acked = acked || rep.syncs == 1
			default:
				return datapath.ErrUnexpected
			}
		}
	}
	return nil
}
