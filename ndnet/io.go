package ndnet

import (
	"context"
	"errors"
	"io"
	"net"
	"os"

	"github.com/godirect/nd"
)

// Read reads stream bytes into b. It blocks until at least one byte is
// there, the peer ended its stream (io.EOF once every byte before it was
// read), the connection failed, the read deadline passed or Close was
// called. It copies each byte once, from the receive slot or ring where the
// peer placed it, and allocates nothing.
func (c *Conn) Read(b []byte) (int, error) {
	c.rmu.Lock()
	defer c.rmu.Unlock()
	dl := c.readDL.wait()
	w := waiter{window: &c.rspin}
	for {
		if isClosed(c.closedCh) {
			return 0, c.opError("read", net.ErrClosed)
		}
		if isClosed(dl) {
			return 0, c.opError("read", os.ErrDeadlineExceeded)
		}
		if len(b) == 0 {
			return 0, nil
		}
		c.mu.Lock()
		// Bytes already queued are read before the completion queue is
		// polled: a reader of small pieces (io.Copy's 8 KiB) of a long
		// stream polls once per frame or ring chunk it drains, not once
		// per call; one that drained the queue polls for more.
		queued := c.rxqLen > 0
		if !queued {
			c.readPollLocked()
		}
		c.appPolls++
		n := c.readLocked(b)
		if queued && n < len(b) && c.readPollLocked() {
			n += c.readLocked(b[n:])
		}
		var err error
		if n == 0 && c.rxqLen == 0 {
			switch {
			case c.err != nil && (c.shut.peer == peerOpen || errors.Is(c.err, ErrProtocol)):
				err = c.opError("read", c.err)
			case c.shut.peer != peerOpen:
				err = io.EOF
			}
		}
		c.mu.Unlock()
		if n > 0 {
			w.done(c)
		}
		if n > 0 || err != nil {
			return n, err
		}
		if !w.wait(c, c.rwake, dl, c.closedCh) {
			continue // the loop reports why
		}
	}
}

// writeReadyLocked reports whether Write's next step is an eager frame
// that can go now without a poll: it has the credit and the send queue
// room it needs. Steps through the ring poll first: the poll frees ring
// space, and a piece staged before it would be smaller.
func (c *Conn) writeReadyLocked(rem, staged int) bool {
	eager := staged == 0 && !(rem > c.eagerMax && c.ringSize > 0 && c.helloRecv)
	return eager && c.err == nil && !c.dead && c.dataCredit() && c.txRoom() > 0
}

// readPollLocked is Read's poll of the completion queue (pollLocked),
// counted in readPolls.
func (c *Conn) readPollLocked() bool {
	c.readPolls++
	return c.pollLocked()
}

// readLocked copies what is there into b, frees what it consumed, and
// returns the count. Ring bytes are copied with c.mu released: between
// ringOut and ringIn the ring is Read's alone.
func (c *Conn) readLocked(b []byte) int {
	n := 0
	for n < len(b) && c.rxqLen > 0 {
		e := &c.rxq[c.rxqHead]
		if e.slot >= 0 {
			k := copy(b[n:], c.rx[e.slot].buf[e.off:e.end])
			e.off += k
			n += k
			if e.off == e.end {
				slot := e.slot
				c.popLocked()
				c.slotsFreed++
				c.repostLocked(slot)
			}
			continue
		}
		off := int(c.ringOut % uint64(c.ringSize))
		k := min(len(b)-n, e.n, c.ringSize-off)
		c.mu.Unlock()
		copy(b[n:n+k], c.ring[off:off+k])
		c.mu.Lock()
		c.ringOut += uint64(k)
		e.n -= k
		n += k
		if e.n == 0 {
			c.popLocked()
		}
	}
	if n > 0 {
		c.flushControlLocked()
	}
	return n
}

// popLocked removes the oldest frame waiting for Read.
func (c *Conn) popLocked() {
	c.rxqHead++
	if c.rxqHead == len(c.rxq) {
		c.rxqHead = 0
	}
	c.rxqLen--
}

// Write writes b to the stream. It returns once every byte is posted to the
// peer (credit and buffer space permitting), or with the count written and
// an error if the write deadline passes, Close or CloseWrite is called, the
// peer closed, or the connection failed. Chunks up to InlineThreshold
// travel inside frames, larger ones by RDMA Write into the peer's ring; each
// byte is copied once on this side (into a frame or the staging ring) and
// Write allocates nothing. Over a provider whose memory the peer maps
// (provider/shm), chunks of 64 KiB and more are RDMA-written from b itself,
// and Write returns only once those Writes completed (the provider copies
// them into the peer's ring from this side, or the peer's side pulls them
// from b); the registration of b stays, for the next Write of the same
// buffer, until a Write of another buffer or Close (the Conn refers to b
// until then, but never reads it outside Write). If the write deadline
// passes, or Close's linger ends, while the peer has not taken those bytes
// yet (a peer process that stopped running), the connection fails with an
// error wrapping ErrConnReset, which Write returns.
func (c *Conn) Write(b []byte) (n int, err error) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	dl := c.writeDL.wait()
	w := waiter{window: &c.wspin}
	var ws writeState
	defer func() {
		if ws.fromSource { // b is the caller's again once this returns
			if werr := c.waitSourceDone(dl); werr != nil && err == nil {
				err = werr
			}
		}
	}()
	for {
		if isClosed(c.closedCh) {
			return ws.n, c.opError("write", net.ErrClosed)
		}
		if isClosed(dl) {
			return ws.n, c.opError("write", os.ErrDeadlineExceeded)
		}
		if ws.n == len(b) {
			return ws.n, nil
		}
		c.mu.Lock()
		// The completion queue is polled when the Write cannot go on as
		// things stand: a poll before every Send would let the transport
		// send what it holds back for the next Send (provider/tcp's
		// answer to the peer's zero-length Read) alone, a packet more
		// per message.
		ready := c.writeReadyLocked(len(b)-ws.n, ws.staged)
		if !ready {
			c.pollLocked()
		}
		c.appPolls++
		if err := c.writeErrLocked(); err != nil {
			c.mu.Unlock()
			return ws.n, c.opError("write", err)
		}
		progressed, stage := c.writeStepLocked(b, &ws)
		if stage > 0 {
			// Into the staging ring, with c.mu released; the next step posts it.
			off, first := c.ringSplitLocked(stage)
			c.mu.Unlock()
			copy(c.stage[off:off+first], b[ws.n:ws.n+first])
			copy(c.stage[:stage-first], b[ws.n+first:ws.n+stage])
			ws.staged = stage
			continue
		}
		if progressed && ready {
			c.pollLocked() // after the Send: what the poll before it would have reaped
		}
		c.mu.Unlock()
		if progressed {
			w.done(c)
			continue
		}
		w.wait(c, c.wwake, dl, c.closedCh)
	}
}

// writeState is where a Write is in its buffer b, for its steps.
type writeState struct {
	n          int  // bytes of b posted
	staged     int  // bytes of b[n:] copied into the staging ring, not yet posted
	fromSource bool // RDMA Writes were posted from b itself: Write waits for them
}

// writeStepLocked takes Write's next step in b, as credit, send queue room
// and ring space allow: it posts the staged bytes, the next ring chunk from
// b itself (ringStepLocked) or the next data frame, and reports whether it
// did; or it returns the size of the next ring chunk to copy into the
// staging ring (stage), which Write copies with c.mu released. c.mu held.
func (c *Conn) writeStepLocked(b []byte, ws *writeState) (progressed bool, stage int) {
	rem := len(b) - ws.n
	switch {
	case ws.staged > 0:
		if c.dataCredit() && c.txRoom() >= 3 {
			off, first := c.ringSplitLocked(ws.staged)
			if c.postRingLocked(c.stage[off:off+first], c.stage[:ws.staged-first], c.ringMR) {
				ws.n += ws.staged
				ws.staged = 0
				return true, 0
			}
		}
	case rem > c.eagerMax && c.ringSize > 0 && c.helloRecv:
		return c.ringStepLocked(b, ws)
	default:
		if c.dataCredit() && c.txRoom() > 0 {
			k := min(rem, c.eagerMax)
			if c.sendFrameLocked(frameData, 0, b[ws.n:ws.n+k], 0) {
				ws.n += k
				return true, 0
			}
		}
	}
	return false, 0
}

// ringStepLocked is writeStepLocked's step through the peer's ring with
// nothing staged: over a provider whose memory the peer maps, it posts the
// next chunk from b itself and reports whether it did; otherwise it
// returns the size of the next chunk to stage, 0 when the ring has no
// room. c.mu held.
func (c *Conn) ringStepLocked(b []byte, ws *writeState) (progressed bool, stage int) {
	rem := len(b) - ws.n
	space := c.ringSpaceLocked()
	if c.adapter.alloc != nil && (ws.fromSource || min(rem, c.chunkMax) >= zeroCopyMin) {
		// From b itself: chunks of at least zeroCopyMin, but for
		// the end of a Write that began so.
		if space < min(rem, zeroCopyMin) || !c.dataCredit() || c.txRoom() < 3 {
			return false, 0
		}
		if mr := c.sourceRegionLocked(b); mr != nil {
			k := min(rem, space, c.chunkMax)
			_, first := c.ringSplitLocked(k)
			// Write waits for these RDMA Writes before it
			// returns, even if only some of them get posted.
			ws.fromSource = true
			c.sourceEnd = c.ringSent + uint64(k)
			if c.postRingLocked(b[ws.n:ws.n+first], b[ws.n+first:ws.n+k], mr) {
				ws.n += k
				return true, 0
			}
			return false, 0
		} // not registered: through the staging ring
	}
	if space > 0 && c.dataCredit() {
		return false, min(rem, space, c.chunkMax)
	}
	return false, 0
}

// writeErrLocked is why Write cannot go on, or nil.
func (c *Conn) writeErrLocked() error {
	switch {
	case c.shut.writeShut():
		return ErrWriteShutdown
	case c.shut.peer == peerClosed:
		return ErrBrokenPipe
	case c.err != nil:
		return c.err
	}
	return nil
}

// ringSpaceLocked is the free space of the peer's ring that is also free in
// the staging ring (its RDMA Writes completed).
func (c *Conn) ringSpaceLocked() int {
	base := min(c.peerRingAck, c.writesDone)
	return c.ringSize - int(c.ringSent-base)
}

// ringSplitLocked returns where the next k bytes go in the peer's ring:
// from offset off (ringSent's), first of them up to the ring's end and the
// rest from its start.
func (c *Conn) ringSplitLocked(k int) (off, first int) {
	off = int(c.ringSent % uint64(c.ringSize))
	return off, min(k, c.ringSize-off)
}

// postRingLocked posts the RDMA Writes of the next ring bytes, head at
// ringSent's offset and tail (if they wrap) at the ring's start, from
// region mr (the staging ring's, or the caller's buffer's), and the frame
// announcing them.
func (c *Conn) postRingLocked(head, tail []byte, mr nd.MemoryRegion) bool {
	off, _ := c.ringSplitLocked(len(head))
	if !c.postWriteLocked(off, head, mr) {
		return false
	}
	if len(tail) > 0 && !c.postWriteLocked(0, tail, mr) {
		return false
	}
	k := len(head) + len(tail)
	c.ringSent += uint64(k)
	return c.sendFrameLocked(frameRing, 0, nil, k)
}

// postWriteLocked posts an RDMA Write of src, in region mr, to offset off
// of the peer's ring.
func (c *Conn) postWriteLocked(off int, src []byte, mr nd.MemoryRegion) bool {
	n := len(src)
	s := c.nextTx()
	s.write = n
	s.sgl[0] = nd.SGE{Buffer: src, Region: mr}
	if err := c.ep.Write(&s.res, s.sgl[:], c.peerWindow, uint64(off), c.sendFlags(true)); err != nil {
		c.txLen--
		c.failLocked(c.transportError(err))
		return false
	}
	return true
}

// zeroCopyMin is the least ring chunk that Write, over a provider whose
// memory the peer maps (one with an allocator: provider/shm), RDMA-writes
// straight from the caller's buffer instead of through the staging ring:
// two copies of each byte in all (the RDMA Write's, then Read's) instead
// of three, for a registration of the buffer, which is kept for the next
// Write of the same one.
const zeroCopyMin = 64 << 10

// sourceRegionLocked returns a registration of b's backing array from b on,
// reusing the last one when b starts where it did, with the same capacity
// (a Write of the same buffer, or of a prefix of it); nil if the adapter
// refuses to register it. The last Write from the one it replaces has
// completed (waitSourceDone): Writes do not overlap.
func (c *Conn) sourceRegionLocked(b []byte) nd.MemoryRegion {
	if c.srcMR != nil && cap(c.srcBuf) == cap(b) && &c.srcBuf[0] == &b[0] {
		return c.srcMR
	}
	if c.srcMR != nil {
		c.adapter.DeregisterMemory(context.Background(), c.srcMR)
		c.srcMR, c.srcBuf = nil, nil
	}
	mr, err := c.adapter.RegisterMemory(context.Background(), b[:cap(b)])
	if err != nil {
		return nil
	}
	c.srcMR, c.srcBuf = mr, b[:cap(b)]
	return mr
}

// waitSourceDone returns once the RDMA Writes posted from the caller's
// buffer are over, polling, then sleeping as a blocked Write does. They
// end when they complete, or when the connection fails and the flush
// ends them. A write deadline that passes while they are still under way
// (the peer's side has not taken them: over shm, a peer that stopped
// running), or the teardown after Close's linger (destroy, which stops
// the progress goroutine first and then wakes the Write), fails the
// connection: Write must not return while the provider may read the
// buffer, and the stream cannot go on without those bytes. It returns the
// connection's error if it failed.
func (c *Conn) waitSourceDone(dl chan struct{}) error {
	w := waiter{window: &c.wspin}
	for {
		c.mu.Lock()
		c.pollLocked()
		done := c.sourceDoneLocked()
		if !done && !c.dead && (isClosed(dl) || isClosed(c.runDone)) {
			c.failLocked(errSourceAbandoned)
		}
		err := c.err
		c.mu.Unlock()
		if done {
			if err != nil {
				return c.opError("write", err)
			}
			return nil
		}
		// Close does not end this wait (the bytes are still the
		// provider's): destroy wakes it once runDone is closed.
		w.wait(c, c.wwake, dl, nil)
	}
}

// sourceDoneLocked reports whether every RDMA Write posted from a caller's
// buffer has retired.
func (c *Conn) sourceDoneLocked() bool { return c.writesDone >= c.sourceEnd || c.txLen == 0 }
