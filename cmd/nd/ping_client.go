package main

// The active side of nd ping: streams Sends within its credits and the
// pipeline depth, and ends each size with a sync the server acknowledges.

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net/netip"

	"github.com/godirect/nd"
)

// streamer is the client's data path.
type streamer struct {
	ep      nd.Endpoint
	reaper  *reaper
	replies *receiveRing
	reply   [pingReplySize]byte // the reply being parsed
	sends   *requestRing
	credits int
	sendBuf []byte
	sendMR  nd.MemoryRegion
	sgl     []nd.SGE
	sges    int
	inline  int
}

// drive connects from adapter a to the server at remote, runs the warm-up
// and the sweep, prints the table to out and disconnects.
func (c *pingConfig) drive(ctx context.Context, a nd.Adapter, remote netip.AddrPort, out io.Writer) error {
	steps := sweep(int(c.maxSize), oneWayIterations, c.iters)
	warm := warmups(c.iters)
	// Every size, and the warm-up, ends with a sync message.
	messages := int64(warm) + totalIters(steps) + int64(len(steps)) + 1
	maxSize := steps[len(steps)-1].size

	ai, err := queryAdapter(a)
	if err != nil {
		return err
	}
	limits := nd.EndpointLimits{
		InboundEntries:  pingReplies,
		OutboundEntries: c.depth,
		InboundSGE:      1,
		OutboundSGE:     c.sges,
	}
	if err := c.checkQueues(ai, limits); err != nil {
		return fmt.Errorf("adapter %s: %w", a.Address(), err)
	}
	if err := checkSize(ai, maxSize); err != nil {
		return fmt.Errorf("adapter %s: %w", a.Address(), err)
	}
	s, err := newSession(a, nil, limits)
	if err != nil {
		return err
	}
	defer s.close()
	sendBuf, sendMR, err := registered(ctx, a, maxSize)
	if err != nil {
		return err
	}
	replyBuf, replyMR, err := registered(ctx, a, pingReplies*pingReplySize)
	if err != nil {
		deregister(ctx, a, sendMR)
		return err
	}
	defer deregister(ctx, a, sendMR, replyMR)
	replies, err := newReceiveSlots(s.ep, replyBuf, replyMR, pingReplies)
	if err != nil {
		return err
	}
	credits := 0
	checkWelcome := func(b []byte) error {
		if err := pingGreeting.checkWelcome(b); err != nil {
			return err
		}
		if len(b) < welcomeSize+4 {
			return fmt.Errorf("the server's welcome has no credits (private data %q)", b)
		}
		if credits = int(binary.BigEndian.Uint32(b[welcomeSize:])); credits < 1 {
			return fmt.Errorf("the server grants no credits")
		}
		return nil
	}
	if err := s.dial(ctx, remote, pingGreeting.hello(hello{maxSize: maxSize, count: messages}), checkWelcome); err != nil {
		return err
	}

	st := &streamer{
		ep:      s.ep,
		reaper:  newReaper(ctx, s.cq, c.blocking, pingReplies+c.depth),
		replies: replies,
		sends:   newRequestRing(c.depth),
		credits: credits,
		sendBuf: sendBuf,
		sendMR:  sendMR,
		sgl:     make([]nd.SGE, c.sges),
		sges:    c.sges,
		inline:  s.ep.MaxInlineData(),
	}
	if err := measureSweep(out, warm, steps, 1, 1, st.stream); err != nil {
		return err
	}
	if err := s.conn.Disconnect(ctx); err != nil {
		return fmt.Errorf("disconnecting: %w", err)
	}
	return nil
}

// stream sends n messages of size bytes and a sync, and returns when the
// server acknowledged the sync and every Send completed. A Send is inline
// when size is at most the endpoint's MaxInlineData. It allocates nothing
// unless it fails.
func (st *streamer) stream(size, n int) error {
	region := st.sendMR
	if size <= st.inline {
		region = nil
	}
	sgl := splitSGL(st.sgl, st.sendBuf[:size], region, st.sges)
	sent, synced, acked := 0, false, false
	for !acked || st.sends.pending > 0 {
		for !synced && st.credits > 0 && !st.sends.full() {
			msg := sgl
			if sent == n {
				msg, synced = nil, true // the sync: a zero-byte Send
			}
			if err := st.ep.Send(st.sends.next(), msg, 0); err != nil {
				return fmt.Errorf("message %d: Send: %w", sent, err)
			}
			st.sends.posted()
			st.credits--
			if !synced {
				sent++
			}
		}
		done, err := st.reaper.next()
		if err != nil {
			return fmt.Errorf("after %d messages: %w", sent, err)
		}
		for _, r := range done {
			switch {
			case st.sends.owns(r):
				if err := st.sends.complete(); err != nil {
					return fmt.Errorf("after %d messages: Send completed with %w", sent, err)
				}
			case st.replies.owns(r):
				got, err := st.replies.complete(st.reply[:])
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
				return errUnexpected
			}
		}
	}
	return nil
}
