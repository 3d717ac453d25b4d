package ndnet

import (
	"errors"
	"fmt"
	"time"
)

// Config sizes a connection's buffers and bounds its waits. Use
// DefaultConfig and change what you need; the zero value of a field means
// its default.
type Config struct {
	// QueueDepth is the number of frames the peer may send before this
	// side returns credit: the receive buffers kept posted (2..4096,
	// default 32).
	QueueDepth int
	// InlineThreshold is the largest Write chunk carried eagerly inside a
	// frame, copied into one of the peer's posted receive buffers; larger
	// writes go by RDMA Write into the peer's ring (64..1 MiB, default
	// 4072, frames of 4 KiB).
	InlineThreshold int
	// BufferSize is the size of the ring each side exposes to the peer's
	// RDMA Writes, a power of two from 4 KiB to 1 GiB (default 1 MiB). A
	// connection uses the smaller of the two sides' sizes. Negative turns
	// the ring off: every byte then travels in frames.
	BufferSize int
	// Spin is the longest a blocked Read or Write polls the completion
	// queue before it sleeps (default 300µs; negative: never polls). How
	// long it polls adapts to how long the waits of its direction last,
	// between Spin/15 and Spin: it grows while waits that slept end within
	// Spin, and halves after each wait longer than Spin, so that a peer
	// that is idle for long costs short polls.
	Spin time.Duration
	// Linger bounds how long Close waits for the peer to acknowledge the
	// end of the stream before it tears the connection down (default 10s).
	Linger time.Duration
	// HandshakeTimeout bounds one connection's set-up on a Listener
	// (default 10s).
	HandshakeTimeout time.Duration
}

// DefaultConfig returns the defaults.
func DefaultConfig() Config {
	return Config{
		QueueDepth:       32,
		InlineThreshold:  4096 - HeaderSize,
		BufferSize:       1 << 20,
		Spin:             300 * time.Microsecond,
		Linger:           10 * time.Second,
		HandshakeTimeout: 10 * time.Second,
	}
}

var errConfig = errors.New("ndnet: invalid Config")

// withDefaults fills zero fields with defaults and checks the result.
func (c Config) withDefaults() (Config, error) {
	d := DefaultConfig()
	if c.QueueDepth == 0 {
		c.QueueDepth = d.QueueDepth
	}
	if c.InlineThreshold == 0 {
		c.InlineThreshold = d.InlineThreshold
	}
	if c.BufferSize == 0 {
		c.BufferSize = d.BufferSize
	}
	if c.Spin == 0 {
		c.Spin = d.Spin
	}
	if c.Linger == 0 {
		c.Linger = d.Linger
	}
	if c.HandshakeTimeout == 0 {
		c.HandshakeTimeout = d.HandshakeTimeout
	}
	if c.Spin < 0 {
		c.Spin = 0
	}
	switch {
	case c.QueueDepth < minDepth || c.QueueDepth > maxDepth:
		return c, fmt.Errorf("%w: QueueDepth %d outside %d..%d", errConfig, c.QueueDepth, minDepth, maxDepth)
	case c.InlineThreshold < minFrameSize-HeaderSize || c.InlineThreshold > maxFrameSize-HeaderSize:
		return c, fmt.Errorf("%w: InlineThreshold %d outside %d..%d", errConfig, c.InlineThreshold, minFrameSize-HeaderSize, maxFrameSize-HeaderSize)
	case c.BufferSize > 0 && (c.BufferSize < minRingSize || c.BufferSize > maxRingSize || c.BufferSize&(c.BufferSize-1) != 0):
		return c, fmt.Errorf("%w: BufferSize %d is not a power of two from %d to %d", errConfig, c.BufferSize, minRingSize, maxRingSize)
	}
	if c.BufferSize < 0 {
		c.BufferSize = 0
	}
	return c, nil
}

// Receive buffers posted beyond QueueDepth: creditSlots for credit frames
// (each returns at least half the depth or half the ring, so at most
// 2 + 2 are unprocessed at once), and one each for the connection's single
// frameFin, frameClose and frameFinAck.
const (
	creditSlots  = 4
	controlSlots = 3
	extraSlots   = creditSlots + controlSlots
)

// sendSlots is the number of outbound requests a connection keeps in
// flight: frames and RDMA Writes (a ring chunk takes up to three).
func sendSlots(depth int) int { return 2*depth + 8 }
