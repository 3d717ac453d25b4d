// Package shmring is a single-producer / single-consumer ring of
// variable-size records in memory shared by two processes, with a doorbell
// protocol that costs nothing while the consumer is busy.
//
// # Layout
//
// A ring occupies Size(dataSize) bytes: a control block of ControlSize
// bytes followed by dataSize bytes of records (a power of two). The control
// block holds four words, each on its own cache line and each written by
// one side only:
//
//	offset   0: tail     uint64  producer: bytes ever published
//	offset  64: wantRoom uint32  producer: 1 while it sleeps waiting for room
//	offset 128: head     uint64  consumer: bytes ever consumed
//	offset 192: sleeping uint32  consumer: 1 while it sleeps waiting for data
//
// head and tail count bytes from the ring's creation (they never wrap in
// practice); the position in the data area is the count modulo dataSize.
//
// # Records
//
// A record is an 8-byte header, little-endian (length uint32: payload bytes;
// type uint16; aux uint16), followed by the payload, padded to a multiple of
// 8 bytes. A record never wraps: when it does not fit before the end of the
// data area the producer fills the rest with a pad record (type 0) and
// starts again at offset 0. No record is longer than a quarter of the data
// area, so a producer always makes progress once the consumer does.
//
// # Trust
//
// The other process may be buggy or hostile: it can store anything in the
// shared words and records at any time. The consumer reads tail once per
// refresh and each header once, into locals, and checks that every record
// lies inside the published part of the data area; the producer checks the
// head it reads against what it published. A violation is ErrCorrupt, never
// an access outside the ring. Payload bytes handed to the caller are views of
// shared memory that the peer may still change: callers copy them or read
// each field once.
//
// # Doorbells
//
// The consumer spins briefly when the ring is empty, then stores sleeping=1,
// checks tail again (a producer that published before seeing the flag is
// not missed), and blocks in its Waiter; the producer, after publishing,
// rings the consumer's Bell only if it sees sleeping=1. The producer waits
// for room the same way with wantRoom. The atomics are sequentially
// consistent, so of "store flag, load index" on one side and "store index,
// load flag" on the other, at least one side sees the other's store: no
// wake-up is lost.
package shmring

import (
	"encoding/binary"
	"errors"
	"runtime"
	"time"
)

// ControlSize is the size of a ring's control block.
const ControlSize = 256

// HeaderSize is the size of a record header.
const HeaderSize = 8

// Offsets of the control words.
const (
	offTail     = 0
	offWantRoom = 64
	offHead     = 128
	offSleeping = 192
)

// typePad is the record type that fills the end of the data area.
const typePad = 0

// MinDataSize and MaxDataSize bound a ring's data area.
const (
	MinDataSize = 4 << 10
	MaxDataSize = 1 << 30
)

// Errors.
var (
	// ErrCorrupt: the shared indices or a record header are inconsistent;
	// the peer is broken or hostile and the ring must not be used again.
	ErrCorrupt = errors.New("shmring: corrupt ring")
	// ErrTooLarge: a record longer than MaxPayload was asked for.
	ErrTooLarge = errors.New("shmring: record too large")
	// ErrSize: the memory or data size given does not make a ring.
	ErrSize = errors.New("shmring: bad ring size")
)

// Size returns the bytes a ring with dataSize bytes of data occupies.
func Size(dataSize int) int { return ControlSize + dataSize }

// ValidDataSize reports whether n is a power of two in
// [MinDataSize, MaxDataSize].
func ValidDataSize(n int) bool {
	return n >= MinDataSize && n <= MaxDataSize && n&(n-1) == 0
}

// MaxPayload returns the longest payload a ring with dataSize bytes of data
// carries in one record.
func MaxPayload(dataSize int) int { return dataSize/4 - HeaderSize }

// Bell wakes the other side (an eventfd write, for instance).
type Bell interface{ Ring() }

// Waiter blocks until the other side rings, or returns an error when it can
// wait no more (closed).
type Waiter interface{ Wait() error }

type ring struct {
	tail, head         *uint64
	wantRoom, sleeping *uint32
	data               []byte
	size               uint64
	mask               uint64
	maxRecord          uint64
}

func newRing(mem []byte) (ring, error) {
	n := len(mem) - ControlSize
	if !ValidDataSize(n) {
		return ring{}, ErrSize
	}
	return ring{
		tail:      Word64(mem, offTail),
		head:      Word64(mem, offHead),
		wantRoom:  Word32(mem, offWantRoom),
		sleeping:  Word32(mem, offSleeping),
		data:      mem[ControlSize:len(mem):len(mem)],
		size:      uint64(n),
		mask:      uint64(n - 1),
		maxRecord: uint64(n / 4),
	}, nil
}

func align8(n uint64) uint64 { return (n + 7) &^ 7 }

// Producer is the writing side of a ring. It is not safe for concurrent
// use.
type Producer struct {
	r         ring
	pos       uint64 // local tail: bytes reserved
	published uint64 // tail as last stored
	headSeen  uint64 // head as last read (validated)
	bell      Bell   // the consumer's data doorbell
}

// NewProducer returns the producer of the ring in mem (Size(dataSize)
// bytes, 8-byte aligned, zeroed or continuing at the indices it holds); bell
// wakes the consumer.
func NewProducer(mem []byte, bell Bell) (*Producer, error) {
	r, err := newRing(mem)
	if err != nil {
		return nil, err
	}
	t := Load64(r.tail)
	return &Producer{r: r, pos: t, published: t, headSeen: t, bell: bell}, nil
}

// MaxPayload is the longest payload one record carries.
func (p *Producer) MaxPayload() int { return int(p.r.maxRecord) - HeaderSize }

// room refreshes the consumer's head and reports whether need bytes fit
// after pos.
func (p *Producer) room(need uint64) (bool, error) {
	if p.pos+need-p.headSeen <= p.r.size {
		return true, nil
	}
	h := Load64(p.r.head)
	if h < p.headSeen || h > p.published {
		return false, ErrCorrupt
	}
	p.headSeen = h
	raceAcquire()
	return p.pos+need-p.headSeen <= p.r.size, nil
}

// span returns the bytes a record with an n-byte payload needs at pos,
// including the pad before it when it would cross the end.
func (p *Producer) span(n int) (total, pad uint64) {
	total = align8(HeaderSize + uint64(n))
	idx := p.pos & p.r.mask
	if idx+total > p.r.size {
		pad = p.r.size - idx
	}
	return total, pad
}

// Reserved returns the producer's position: the bytes ever reserved, up to
// the end of the last record reserved.
func (p *Producer) Reserved() uint64 { return p.pos }

// Consumed reads the consumer's head (the bytes it ever consumed and
// published) and validates it; ErrCorrupt if it moved back or past what
// was published.
func (p *Producer) Consumed() (uint64, error) {
	h := Load64(p.r.head)
	if h < p.headSeen || h > p.published {
		return 0, ErrCorrupt
	}
	p.headSeen = h
	raceAcquire()
	return h, nil
}

// Fits reports whether a record with an n-byte payload can be reserved now.
func (p *Producer) Fits(n int) (bool, error) {
	if n < 0 || n > p.MaxPayload() {
		return false, ErrTooLarge
	}
	total, pad := p.span(n)
	return p.room(total + pad)
}

// Reserve appends a record of type typ (not 0) with aux and an n-byte
// payload, and returns the payload for the caller to fill before Publish.
// It returns nil and no error when the ring has no room now.
func (p *Producer) Reserve(typ, aux uint16, n int) ([]byte, error) {
	if n < 0 || n > p.MaxPayload() || typ == typePad {
		return nil, ErrTooLarge
	}
	total, pad := p.span(n)
	ok, err := p.room(total + pad)
	if !ok {
		return nil, err
	}
	if pad > 0 {
		idx := p.pos & p.r.mask
		putHeader(p.r.data[idx:idx+HeaderSize], uint32(pad-HeaderSize), typePad, 0)
		p.pos += pad
	}
	idx := p.pos & p.r.mask
	putHeader(p.r.data[idx:idx+HeaderSize], uint32(n), typ, aux)
	p.pos += total
	return p.r.data[idx+HeaderSize : idx+HeaderSize+uint64(n) : idx+HeaderSize+uint64(n)], nil
}

func putHeader(b []byte, n uint32, typ, aux uint16) {
	binary.LittleEndian.PutUint32(b[0:4], n)
	binary.LittleEndian.PutUint16(b[4:6], typ)
	binary.LittleEndian.PutUint16(b[6:8], aux)
}

// Publish makes the records reserved so far visible to the consumer and
// rings its doorbell if it sleeps.
func (p *Producer) Publish() {
	if p.pos == p.published {
		return
	}
	p.published = p.pos
	raceRelease()
	Store64(p.r.tail, p.pos)
	if Load32(p.r.sleeping) != 0 && p.bell != nil {
		p.bell.Ring()
	}
}

// WaitRoom waits until a record with an n-byte payload fits: it spins for
// up to spin, then sleeps in w until the consumer frees room. Records
// reserved and not published are published first.
func (p *Producer) WaitRoom(n int, w Waiter, spin time.Duration) error {
	p.Publish()
	var start time.Time
	for i := 0; ; i++ {
		ok, err := p.Fits(n)
		if ok || err != nil {
			return err
		}
		if i&63 == 0 {
			if i == 0 {
				start = time.Now()
			} else if time.Since(start) > spin {
				break
			}
		}
		runtime.Gosched()
	}
	for {
		Store32(p.r.wantRoom, 1)
		ok, err := p.Fits(n)
		if ok || err != nil {
			Store32(p.r.wantRoom, 0)
			return err
		}
		err = w.Wait()
		Store32(p.r.wantRoom, 0)
		if err != nil {
			return err
		}
	}
}

// ArmRoom prepares to sleep until a record with an n-byte payload fits:
// it stores wantRoom=1 and checks again. If the record fits now, it clears
// the flag and returns true; otherwise the caller sleeps on the doorbell
// the consumer rings (without touching the producer meanwhile) and calls
// Disarm when it wakes.
func (p *Producer) ArmRoom(n int) (bool, error) {
	p.Publish()
	Store32(p.r.wantRoom, 1)
	ok, err := p.Fits(n)
	if ok || err != nil {
		Store32(p.r.wantRoom, 0)
	}
	return ok, err
}

// Disarm clears the flag ArmRoom set.
func (p *Producer) Disarm() { Store32(p.r.wantRoom, 0) }

// Consumer is the reading side of a ring. It is not safe for concurrent
// use.
type Consumer struct {
	r         ring
	pos       uint64 // local head: bytes consumed
	published uint64 // head as last stored
	tailSeen  uint64 // tail as last read (validated)
	bell      Bell   // the producer's room doorbell
	err       error
}

// NewConsumer returns the consumer of the ring in mem; bell wakes the
// producer when it waits for room.
func NewConsumer(mem []byte, bell Bell) (*Consumer, error) {
	r, err := newRing(mem)
	if err != nil {
		return nil, err
	}
	h := Load64(r.head)
	return &Consumer{r: r, pos: h, published: h, tailSeen: h, bell: bell}, nil
}

// Record is one record as the consumer found it. Payload is a view of the
// shared ring, valid until the next Publish; the peer may change its bytes
// meanwhile.
type Record struct {
	Type, Aux uint16
	Payload   []byte
}

// refresh reads the producer's tail once and validates it.
func (c *Consumer) refresh() error {
	t := Load64(c.r.tail)
	if d := t - c.pos; d > c.r.size || d%8 != 0 {
		return ErrCorrupt
	}
	c.tailSeen = t
	raceAcquire()
	return nil
}

// Next returns the next record. ok is false when none is published; err is
// ErrCorrupt (and stays so) when the ring is inconsistent. Consuming a
// record frees its room only at the next Publish.
func (c *Consumer) Next() (rec Record, ok bool, err error) {
	if c.err != nil {
		return Record{}, false, c.err
	}
	for {
		if c.pos == c.tailSeen {
			if err := c.refresh(); err != nil {
				c.err = err
				return Record{}, false, err
			}
			if c.pos == c.tailSeen {
				return Record{}, false, nil
			}
		}
		idx := c.pos & c.r.mask
		avail := c.tailSeen - c.pos
		h := c.r.data[idx : idx+HeaderSize]
		n := uint64(binary.LittleEndian.Uint32(h[0:4]))
		typ := binary.LittleEndian.Uint16(h[4:6])
		aux := binary.LittleEndian.Uint16(h[6:8])
		if typ == typePad {
			span := c.r.size - idx
			if n+HeaderSize != span || span > avail {
				c.err = ErrCorrupt
				return Record{}, false, c.err
			}
			c.pos += span
			continue
		}
		total := align8(HeaderSize + n)
		if total > c.r.maxRecord || total > c.r.size-idx || total > avail {
			c.err = ErrCorrupt
			return Record{}, false, c.err
		}
		c.pos += total
		end := idx + HeaderSize + n
		return Record{Type: typ, Aux: aux, Payload: c.r.data[idx+HeaderSize : end : end]}, true, nil
	}
}

// Publish frees the room of the records consumed so far and rings the
// producer's doorbell if it waits for room.
func (c *Consumer) Publish() {
	if c.pos == c.published {
		return
	}
	c.published = c.pos
	raceRelease()
	Store64(c.r.head, c.pos)
	if Load32(c.r.wantRoom) != 0 && c.bell != nil {
		c.bell.Ring()
	}
}

// Abandon gives up every record published so far without handing them
// out: the head moves to the tail, so the producer sees (Consumed) that
// this consumer will never look at them. A consumer that stops for good
// calls it last. It does nothing on a corrupt ring.
func (c *Consumer) Abandon() {
	if c.err != nil || c.refresh() != nil {
		return
	}
	c.pos = c.tailSeen
	c.Publish()
}

// Unconsumed reports whether the producer published records this consumer
// has not consumed and published (Publish). It reads only the shared words,
// so it may run concurrently with Next and Publish (in another goroutine
// than the one consuming).
func (c *Consumer) Unconsumed() bool {
	return Load64(c.r.tail) != Load64(c.r.head)
}

// Wait waits until the producer published records beyond what this
// consumer published as consumed (call Publish first): it spins for up to
// spin, then sleeps in w. It returns w's error, or nil when a record may
// be ready (call Next). Like Unconsumed, it reads only the shared words:
// another goroutine may consume meanwhile (Wait then returns at once, or
// when w is rung next).
func (c *Consumer) Wait(w Waiter, spin time.Duration) error {
	var start time.Time
	for i := 0; ; i++ {
		if c.Unconsumed() {
			return nil
		}
		if i&63 == 0 {
			if i == 0 {
				start = time.Now()
			} else if time.Since(start) > spin {
				break
			}
		}
		runtime.Gosched()
	}
	Store32(c.r.sleeping, 1)
	if c.Unconsumed() {
		Store32(c.r.sleeping, 0)
		return nil
	}
	err := w.Wait()
	Store32(c.r.sleeping, 0)
	return err
}
