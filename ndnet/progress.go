package ndnet

// Progress: completions are taken off the connection's completion queue
// under c.mu by whoever needs them: a Read, Write or Close, which polls
// while it spins and sleeps in CompletionQueue.Notify, or the connection's
// one progress goroutine, which sleeps in Notify while they are idle
// (wait.go). Processing a completion only updates state and
// posts Receives and control frames; it never copies stream bytes beyond a
// frame. After it, the waiting Read, Write and Close are woken through
// their channels. Lock order: rmu, then wmu, then mu.

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/godirect/nd"
)

// run is the progress goroutine: it processes completions, and sleeps in
// Notify while the application neither polls nor waits (wait.go). While a
// Read, Write or Close waits in Notify, it waits for the last of them to
// leave (appLeft), at no cost however long that takes; while they poll, it
// looks every progressTakeover whether they still do.
func (c *Conn) run(ctx context.Context) {
	defer close(c.runDone)
	timer := time.NewTimer(progressTakeover)
	defer timer.Stop()
	var seen uint64
	for {
		c.runLooks.Add(1)
		c.mu.Lock()
		c.pollLocked()
		polls := c.appPolls
		c.mu.Unlock()
		busy := polls != seen
		if c.notifying.Load() > 0 {
			// runWaits is set before notifying is read again, and a
			// leaving call lowers notifying before it reads runWaits:
			// one of the two sees the other (see sleep).
			c.runWaits.Store(true)
			if c.notifying.Load() > 0 {
				select {
				case <-c.appLeft:
				case <-ctx.Done():
					return
				}
			}
			c.runWaits.Store(false)
			busy = true // the call that left polls next
		}
		if busy {
			seen = polls
			timer.Reset(progressTakeover)
			select {
			case <-timer.C:
				continue
			case <-ctx.Done():
				return
			}
		}
		if err := c.cq.Notify(ctx, nd.NotifyAny); err != nil {
			if ctx.Err() != nil {
				return
			}
			c.mu.Lock()
			c.failLocked(fmt.Errorf("%w: completion queue: %w", ErrConnReset, err))
			c.mu.Unlock()
			<-ctx.Done()
			return
		}
	}
}

// pollLocked processes every completion queued and reports whether there
// was any.
func (c *Conn) pollLocked() bool {
	any := false
	for {
		n := c.cq.GetResults(c.results[:])
		for _, r := range c.results[:n] {
			c.completeLocked(r)
		}
		if n > 0 {
			any = true
		}
		if n < len(c.results) {
			break
		}
	}
	if any {
		c.flushControlLocked()
		c.wakeAll()
	}
	return any
}

// wakeAll signals the waiting Read, Write and Close.
func (c *Conn) wakeAll() {
	wake(c.rwake)
	wake(c.wwake)
	wake(c.cwake)
}

// failLocked ends the connection with err (the first error stays): the
// endpoint is flushed, so that the peer learns of it, and takes no more
// requests.
func (c *Conn) failLocked(err error) {
	if c.err == nil {
		c.err = err
	}
	c.peerHelloLocked()
	if !c.dead {
		c.dead = true
		c.ep.Flush()
	}
	c.wakeAll()
}

// completeLocked processes one completion.
func (c *Conn) completeLocked(r *nd.Result) {
	if i, ok := c.rxIndex[r]; ok {
		if c.err != nil {
			return // after a failure, nothing the peer sends counts
		}
		if err := r.Status.Err(); err != nil {
			c.failLocked(c.transportError(err))
			return
		}
		c.frameLocked(i, c.rx[i].buf[:r.BytesTransferred])
		return
	}
	if i, ok := c.txIndex[r]; ok {
		err := r.Status.Err()
		if err != nil {
			c.failLocked(c.transportError(err))
		}
		// Outbound requests complete in order: this one retires those
		// posted before it, which completed silently (sendFlags).
		for c.txLen > 0 {
			j := c.txHead
			c.writesDone += uint64(c.tx[j].write)
			if c.txHead++; c.txHead == len(c.tx) {
				c.txHead = 0
			}
			c.txLen--
			if j == i {
				break
			}
		}
		return
	}
	if r == &c.bindRes {
		if err := r.Status.Err(); err != nil {
			c.failLocked(fmt.Errorf("%w: Bind: %w", ErrConnReset, err))
		}
	}
}

// transportError is the connection error for a request that completed with
// err: once the peer ended the stream in order, a torn-down connection is
// no error of the stream.
func (c *Conn) transportError(err error) error {
	if errors.Is(err, nd.ErrCanceled) {
		return ErrConnReset
	}
	return fmt.Errorf("%w: %w", ErrConnReset, err)
}

// repostLocked posts slot i's Receive again.
func (c *Conn) repostLocked(i int) {
	if c.dead {
		return
	}
	if err := c.ep.Receive(&c.rx[i].res, c.rx[i].sgl[:]); err != nil {
		c.failLocked(c.transportError(err))
	}
}

// frameLocked processes the frame received in slot i: the checks every
// frame and every data-class frame pass, then the frame's own handling.
// c.mu held.
func (c *Conn) frameLocked(i int, b []byte) {
	h, payload, err := parseFrame(b)
	if err != nil {
		c.failLocked(&protocolError{err})
		return
	}
	// Acknowledgments: never more than was sent.
	if h.SlotAck-c.peerSlotAck > c.dataSent-c.peerSlotAck {
		c.failLocked(violation("credit for frames never sent"))
		return
	}
	if h.RingAck < c.peerRingAck || h.RingAck > c.ringSent {
		c.failLocked(violation("ring acknowledgment outside the bytes sent"))
		return
	}
	c.peerSlotAck, c.peerRingAck = h.SlotAck, h.RingAck
	if h.Type == frameHello || h.Type == frameData || h.Type == frameRing {
		if c.dataRecv+1-c.freedSent > uint32(c.depth) {
			c.failLocked(violation("data frame beyond the credit given"))
			return
		}
		if h.Type != frameHello && !c.helloRecv {
			c.failLocked(violation("data before hello"))
			return
		}
		if c.shut.peer != peerOpen {
			c.failLocked(violation("data after fin"))
			return
		}
		c.dataRecv++
	}
	switch h.Type {
	case frameHello:
		c.helloFrameLocked(i, payload)
	case frameData:
		if !c.pushLocked(rxEntry{slot: i, off: HeaderSize, end: HeaderSize + len(payload)}) {
			return
		}
	case frameRing:
		c.ringFrameLocked(i, h.Length)
	case frameCredit:
		c.repostLocked(i)
	case frameFin, frameClose, frameFinAck:
		c.endFrameLocked(i, h.Type, h.Flags)
	}
}

// helloFrameLocked processes the peer's hello received in slot i, whose
// payload describes the peer's ring when one was negotiated, and answers
// it on the passive side. c.mu held.
func (c *Conn) helloFrameLocked(i int, payload []byte) {
	if c.helloRecv {
		c.failLocked(violation("second hello"))
		return
	}
	c.helloRecv = true
	if (len(payload) != 0) != (c.ringSize > 0) {
		c.failLocked(violation("hello disagrees with the negotiated ring"))
		return
	}
	if c.ringSize > 0 {
		c.peerWindow.UnmarshalBinary(payload)
		if c.peerWindow.Length != uint64(c.ringSize) {
			c.failLocked(violation("ring window of the wrong size"))
			return
		}
	}
	c.slotsFreed++
	c.repostLocked(i)
	if c.passive {
		if err := c.sendHelloLocked(); err != nil {
			c.failLocked(err)
			return
		}
		c.peerHelloLocked()
	}
}

// ringFrameLocked processes the ring frame received in slot i, which
// announces length more bytes in the ring: they join the bytes waiting for
// Read, and the slot is free again at once. c.mu held.
func (c *Conn) ringFrameLocked(i int, length uint32) {
	if c.ringSize == 0 || uint64(length) > c.ringOutSent+uint64(c.ringSize)-c.ringIn {
		c.failLocked(violation("ring frame beyond the ring's free space"))
		return
	}
	if c.rxqLen > 0 {
		if t := &c.rxq[(c.rxqHead+c.rxqLen-1)%len(c.rxq)]; t.slot < 0 {
			t.n += int(length) // contiguous with the previous ring bytes
			c.ringIn += uint64(length)
			c.slotsFreed++
			c.repostLocked(i)
			return
		}
	}
	if !c.pushLocked(rxEntry{slot: -1, n: int(length)}) {
		return
	}
	c.ringIn += uint64(length)
	c.slotsFreed++
	c.repostLocked(i)
}

// endFrameLocked processes a frame of the stream's end received in slot
// i, of type t with flags: the peer's fin (its stream ended, and a fin-ack
// is due), its close, which follows the fin, or its acknowledgment of the
// fin this side sent. c.mu held.
func (c *Conn) endFrameLocked(i int, t frameType, flags uint8) {
	switch t {
	case frameFin:
		if !c.shut.peerFin(flags&flagClosed != 0) {
			c.failLocked(violation("second fin"))
			return
		}
	case frameClose:
		if !c.shut.peerClose() {
			c.failLocked(violation("close without fin, or twice"))
			return
		}
	case frameFinAck:
		if !c.shut.peerFinAck() {
			c.failLocked(violation("fin acknowledged before it was sent"))
			return
		}
	}
	c.repostLocked(i)
}

// pushLocked appends e to the frames waiting for Read.
func (c *Conn) pushLocked(e rxEntry) bool {
	if c.rxqLen == len(c.rxq) {
		c.failLocked(violation("too many frames outstanding"))
		return false
	}
	c.rxq[(c.rxqHead+c.rxqLen)%len(c.rxq)] = e
	c.rxqLen++
	return true
}

// txRoom is the number of outbound requests that may still be posted.
func (c *Conn) txRoom() int { return len(c.tx) - c.txLen }

// dataCredit reports whether a data-class frame may be sent.
func (c *Conn) dataCredit() bool { return c.dataSent-c.peerSlotAck < uint32(c.peerDepth) }

// nextTx reserves the next outbound slot.
func (c *Conn) nextTx() *txSlot {
	i := c.txHead + c.txLen
	if i >= len(c.tx) {
		i -= len(c.tx)
	}
	c.txLen++
	s := &c.tx[i]
	s.write = 0
	return s
}

// sendFrameLocked posts a frame of type t with payload (copied) or, for
// frameRing, announcing ringLen bytes. The caller checked credit and room;
// it reports false if the endpoint refused the frame (the connection has
// then failed).
func (c *Conn) sendFrameLocked(t frameType, flags uint8, payload []byte, ringLen int) bool {
	if c.dead || c.txRoom() == 0 {
		return false
	}
	s := c.nextTx()
	length := uint32(len(payload))
	if t == frameRing {
		length = uint32(ringLen)
	}
	putHeader(s.buf, header{Type: t, Flags: flags, Length: length, SlotAck: c.slotsFreed, RingAck: c.ringOut})
	n := HeaderSize + copy(s.buf[HeaderSize:], payload)
	s.sgl[0] = nd.SGE{Buffer: s.buf[:n], Region: c.slotsMR}
	if err := c.ep.Send(&s.res, s.sgl[:], c.sendFlags(t != frameData)); err != nil {
		c.txLen--
		c.failLocked(c.transportError(err))
		return false
	}
	c.freedSent, c.ringOutSent = c.slotsFreed, c.ringOut
	if t == frameHello || t == frameData || t == frameRing {
		c.dataSent++
	}
	return true
}

// sendFlags returns the flags of the next outbound request. Data frames
// (signal false) go with silent success, but for one in every len(tx)/4
// in a row: a completion retires every request posted before its own
// (completeLocked), so once a quarter of the slots are in flight, one of
// them signals and its completion frees room for a Write that waits. A
// signaled Send costs a completion to take and, over provider/tcp, a
// confirmation Read whose answer the peer sends back, so silent data
// frames make small round trips faster. The other frames and the ring's
// RDMA Writes signal: a Write's completion frees staging space, and ring
// frames sent silent slowed bulk copies over shm (figures:
// docs/ndnet-protocol.md).
func (c *Conn) sendFlags(signal bool) nd.Flags {
	if signal || c.txSilent >= len(c.tx)/4 {
		c.txSilent = 0
		return 0
	}
	c.txSilent++
	return nd.FlagSilentSuccess
}

// flushControlLocked sends the control frames that are due and fit.
func (c *Conn) flushControlLocked() {
	if c.dead {
		return
	}
	s := &c.shut
	if s.sendAck() && c.txRoom() > 0 && c.sendFrameLocked(frameFinAck, 0, nil, 0) {
		s.ackOut()
	}
	if s.sendFin() && c.txRoom() > 0 && c.sendFrameLocked(frameFin, s.finFlags(), nil, 0) {
		s.finOut()
	}
	if s.sendClose() && c.txRoom() > 0 && c.sendFrameLocked(frameClose, 0, nil, 0) {
		s.closeOut()
	}
	if c.creditDue() && c.txRoom() > 0 {
		c.sendFrameLocked(frameCredit, 0, nil, 0)
	}
}

// creditDue reports whether enough slots or ring bytes were freed since the
// last report to warrant a credit frame.
func (c *Conn) creditDue() bool {
	return int(c.slotsFreed-c.freedSent) >= c.creditMark ||
		(c.ringSize > 0 && c.ringOut-c.ringOutSent >= uint64(c.ringSize/2))
}
