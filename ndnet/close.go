package ndnet

import (
	"context"
	"net"
	"time"
)

// CloseWrite ends this side's stream: the peer's Reads return io.EOF once
// they have read every byte written before it. Reading goes on. Later
// Writes fail with ErrWriteShutdown.
func (c *Conn) CloseWrite() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.shut.closeWrite() {
		return c.opError("close", net.ErrClosed)
	}
	c.flushControlLocked()
	c.wakeAll()
	return nil
}

// Close closes the connection. Pending and later Reads and Writes fail with
// net.ErrClosed. The bytes Writes returned as written still reach the peer,
// followed by the end of the stream (io.EOF to the peer's Reads, and
// ErrBrokenPipe to its Writes): Close waits, at most Config.Linger, until
// the peer acknowledges that end, then tears the ND connection down.
func (c *Conn) Close() error {
	c.mu.Lock()
	if !c.shut.closeConn() {
		c.mu.Unlock()
		return c.opError("close", net.ErrClosed)
	}
	close(c.closedCh)
	c.flushControlLocked()
	c.wakeAll()
	c.mu.Unlock()

	expired := make(chan struct{})
	linger := time.AfterFunc(c.cfg.Linger, func() {
		close(expired)
		wake(c.cwake)
	})
	defer linger.Stop()
	for {
		c.mu.Lock()
		c.pollLocked()
		c.appPolls++
		done := c.dead || c.shut.closeDone()
		c.mu.Unlock()
		if done || isClosed(expired) {
			break
		}
		c.sleep(c.cwake, expired, nil)
	}
	c.destroy()
	return nil
}

// destroy stops the progress goroutine, waits for Read and Write to leave,
// and releases the ND resources.
func (c *Conn) destroy() {
	c.teardown.Do(func() {
		c.runCancel()
		<-c.runDone
		// A Write that sleeps until the peer takes bytes from its
		// caller's buffer wakes, sees runDone closed and gives up
		// (waitSourceDone).
		wake(c.wwake)
		c.rmu.Lock()
		defer c.rmu.Unlock()
		c.wmu.Lock()
		defer c.wmu.Unlock()
		c.mu.Lock()
		c.dead = true
		c.mu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), c.cfg.Linger)
		defer cancel()
		c.connector.Disconnect(ctx)
		c.release()
	})
}
