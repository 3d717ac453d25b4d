package ndnet

import (
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
			case c.err != nil && (!c.peerFin || errors.Is(c.err, ErrProtocol)):
				err = c.opError("read", c.err)
			case c.peerFin:
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
		if !w.wait(c, c.rwake, dl) {
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
// Write allocates nothing.
func (c *Conn) Write(b []byte) (int, error) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	dl := c.writeDL.wait()
	w := waiter{window: &c.wspin}
	n := 0
	staged := 0 // bytes of b[n:] copied into the staging ring, not yet posted
	for {
		if isClosed(c.closedCh) {
			return n, c.opError("write", net.ErrClosed)
		}
		if isClosed(dl) {
			return n, c.opError("write", os.ErrDeadlineExceeded)
		}
		if n == len(b) {
			return n, nil
		}
		c.mu.Lock()
		rem := len(b) - n
		// The completion queue is polled when the Write cannot go on as
		// things stand: a poll before every Send would let the transport
		// send what it holds back for the next Send (provider/tcp's
		// answer to the peer's zero-length Read) alone, a packet more
		// per message.
		ready := c.writeReadyLocked(rem, staged)
		if !ready {
			c.pollLocked()
		}
		c.appPolls++
		if err := c.writeErrLocked(); err != nil {
			c.mu.Unlock()
			return n, c.opError("write", err)
		}
		progressed := false
		switch {
		case staged > 0:
			if c.dataCredit() && c.txRoom() >= 3 {
				if c.postRingLocked(staged) {
					n += staged
					staged = 0
					progressed = true
				}
			}
		case rem > c.eagerMax && c.ringSize > 0 && c.helloRecv:
			if space := c.ringSpaceLocked(); space > 0 && c.dataCredit() {
				k := min(rem, space, c.chunkMax)
				off := int(c.ringSent % uint64(c.ringSize))
				first := min(k, c.ringSize-off)
				c.mu.Unlock()
				copy(c.stage[off:off+first], b[n:n+first])
				copy(c.stage[:k-first], b[n+first:n+k])
				staged = k
				continue
			}
		default:
			if c.dataCredit() && c.txRoom() > 0 {
				k := min(rem, c.eagerMax)
				if c.sendFrameLocked(frameData, 0, b[n:n+k], 0) {
					n += k
					progressed = true
				}
			}
		}
		if progressed && ready {
			c.pollLocked() // after the Send: what the poll before it would have reaped
		}
		c.mu.Unlock()
		if progressed {
			w.done(c)
			continue
		}
		w.wait(c, c.wwake, dl)
	}
}

// writeErrLocked is why Write cannot go on, or nil.
func (c *Conn) writeErrLocked() error {
	switch {
	case c.writeShut:
		return ErrWriteShutdown
	case c.peerClosed:
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

// postRingLocked posts the RDMA Writes of staged bytes at ringSent (two if
// they wrap) and the frame announcing them.
func (c *Conn) postRingLocked(staged int) bool {
	off := int(c.ringSent % uint64(c.ringSize))
	first := min(staged, c.ringSize-off)
	if !c.postWriteLocked(off, first) {
		return false
	}
	if first < staged && !c.postWriteLocked(0, staged-first) {
		return false
	}
	c.ringSent += uint64(staged)
	return c.sendFrameLocked(frameRing, 0, nil, staged)
}

// postWriteLocked posts an RDMA Write of stage[off:off+n] to the same
// offset of the peer's ring.
func (c *Conn) postWriteLocked(off, n int) bool {
	s := c.nextTx()
	s.write = n
	s.sgl[0] = nd.SGE{Buffer: c.stage[off : off+n], Region: c.ringMR}
	if err := c.ep.Write(&s.res, s.sgl[:], c.peerWindow, uint64(off), c.sendFlags(true)); err != nil {
		c.txLen--
		c.failLocked(c.transportError(err))
		return false
	}
	return true
}
