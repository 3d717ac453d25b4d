package verify

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/godirect/nd"
)

// The plan in the client's private data: magic, the largest message, the
// batch size.
const (
	planMagic = "ndvf"
	planSize  = 12
)

// plan is what the client asks the server to prepare for.
type plan struct {
	max   int // the largest message, bytes
	depth int // requests per batch
}

func (p plan) put(b []byte) {
	copy(b, planMagic)
	binary.BigEndian.PutUint32(b[4:], uint32(p.max))
	binary.BigEndian.PutUint32(b[8:], uint32(p.depth))
}

// parsePlan reads a client's private data.
func parsePlan(b []byte) (plan, error) {
	if len(b) < planSize || string(b[:4]) != planMagic {
		return plan{}, errors.New("the client's private data is not an nd verify plan")
	}
	p := plan{max: int(binary.BigEndian.Uint32(b[4:])), depth: int(binary.BigEndian.Uint32(b[8:]))}
	if p.max < 1 || p.max > maxMessage || p.depth < 1 || p.depth > maxDepth {
		return plan{}, fmt.Errorf("the client's plan (largest message %d bytes, depth %d) is outside 1..%d bytes and 1..%d", p.max, p.depth, maxMessage, maxDepth)
	}
	return p, nil
}

// Limits of a plan the server accepts.
const (
	maxMessage = 64 << 20
	maxDepth   = 64
)

// ctlSize is the size of a control message.
const ctlSize = 48

// msgType is a control message's type.
type msgType uint8

const (
	msgHello  msgType = iota + 1 // server: the window's descriptor
	msgSends                     // client: count Sends of size bytes follow
	msgWrites                    // client: count Writes of size bytes were made
	msgFill                      // client: fill count slots for Reads
	msgDone                      // client: no more requests
	msgAnswer                    // server: the request's outcome
)

// ctl is a control message. An answer's status is 0 when the server found
// every byte right; otherwise bad is the message number and at the offset
// of the first wrong byte (-1: a wrong length, got bytes).
type ctl struct {
	typ    msgType
	size   int
	count  int
	seq    uint64
	status uint32
	bad    uint64
	at     int64
	window nd.MWDescriptor // hello only
}

// Answer statuses.
const (
	answerOK       = 0
	answerMismatch = 1 // bytes differ from the pattern (bad, at)
	answerLength   = 2 // a Receive's length differs (bad; at is the length)
	answerProtocol = 3 // a request the server did not expect
)

func (c *ctl) put(b []byte) {
	clear(b[:ctlSize])
	b[0] = byte(c.typ)
	binary.BigEndian.PutUint32(b[4:], uint32(c.size))
	binary.BigEndian.PutUint32(b[8:], uint32(c.count))
	binary.BigEndian.PutUint64(b[12:], c.seq)
	if c.typ == msgHello {
		c.window.Put(b[20:])
		return
	}
	binary.BigEndian.PutUint32(b[20:], c.status)
	binary.BigEndian.PutUint64(b[24:], c.bad)
	binary.BigEndian.PutUint64(b[32:], uint64(c.at))
}

// parseCtl reads a control message of n bytes.
func parseCtl(b []byte) (ctl, error) {
	if len(b) != ctlSize || b[0] < byte(msgHello) || b[0] > byte(msgAnswer) {
		return ctl{}, fmt.Errorf("a %d-byte message that is no control message", len(b))
	}
	c := ctl{
		typ:   msgType(b[0]),
		size:  int(binary.BigEndian.Uint32(b[4:])),
		count: int(binary.BigEndian.Uint32(b[8:])),
		seq:   binary.BigEndian.Uint64(b[12:]),
	}
	if c.typ == msgHello {
		if err := c.window.UnmarshalBinary(b[20 : 20+nd.MWDescriptorSize]); err != nil {
			return ctl{}, err
		}
		return c, nil
	}
	c.status = binary.BigEndian.Uint32(b[20:])
	c.bad = binary.BigEndian.Uint64(b[24:])
	c.at = int64(binary.BigEndian.Uint64(b[32:]))
	return c, nil
}

// answerError describes a server's answer that is not OK.
func answerError(c ctl) error {
	switch c.status {
	case answerOK:
		return nil
	case answerMismatch:
		return fmt.Errorf("the server found message %d (%d bytes) wrong from byte %d on", c.bad, c.size, c.at)
	case answerLength:
		return fmt.Errorf("the server's Receive of message %d got %d bytes, want %d", c.bad, c.at, c.size)
	case answerProtocol:
		return errors.New("the server did not expect the request")
	}
	return fmt.Errorf("the server answered with status %d", c.status)
}
