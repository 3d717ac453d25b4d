// Package shmring is a single-producer / single-consumer ring of
// variable-size records in memory shared by two processes, with a doorbell
// protocol that costs nothing while the consumer is busy.
//
// # Layout
//
// A ring occupies Size(dataSize) bytes: a control block of ControlSize
// bytes followed by dataSize bytes of records (a power of two). The control
// block holds three words, each on its own cache line and each written by
// one side only (offset 0 is reserved):
//
//	offset  64: wantRoom uint32  producer: 1 while it sleeps waiting for room
//	offset 128: head     uint64  consumer: bytes ever consumed
//	offset 192: sleeping uint32  consumer: 1 while it sleeps waiting for data
//
// head counts bytes from the ring's creation (it never wraps in practice);
// the position in the data area is the count modulo dataSize.
//
// # Records
//
// A record is an 8-byte header, one little-endian word (bits 0-31 length:
// payload bytes; bits 32-46 type; bit 47 ready; bits 48-63 aux), followed
// by the payload, padded to a multiple of 8 bytes. A record never wraps:
// when it does not fit before the end of the data area the producer fills
// the rest with a pad record (type 0) and starts again at offset 0. No
// record is longer than a quarter of the data area, so a producer always
// makes progress once the consumer does.
//
// # Publishing
//
// The ready bit publishes a record: the consumer finds the next record by
// reading the header word at its position, one cache line that the
// producer's payload usually shares, rather than an index on a line of its
// own and then the record. Two rules keep a header word from showing an
// older lap's bytes as ready:
//   - the producer stores 0 in the header word that follows each record it
//     reserves (so it keeps 8 bytes free beyond its records), before the
//     record is published;
//   - the first record of a publication gets its header only at Publish,
//     stored last (after every payload and every later header of the
//     publication): the consumer, which takes records in order, sees all
//     of a publication or none of it.
//
// # Trust
//
// The other process may be buggy or hostile: it can store anything in the
// shared words and records at any time. The consumer reads each header
// once, into a local, and checks that the record lies inside the data
// area, is at most a quarter of it and, for a pad, ends exactly at its end;
// the producer checks the head it reads against what it published. A
// violation is ErrCorrupt, never an access outside the ring. Payload bytes
// handed to the caller are views of shared memory that the peer may still
// change: callers copy them or read each field once.
//
// # Doorbells
//
// The consumer spins briefly when the ring is empty, then stores sleeping=1,
// checks the header at its head again (a producer that published before
// seeing the flag is not missed), and blocks in its Waiter; the producer,
// after publishing, rings the consumer's Bell only if it sees sleeping=1.
// The producer waits for room the same way with wantRoom. The atomics are
// sequentially consistent, so of "store flag, load header" on one side and
// "store header, load flag" on the other, at least one side sees the
// other's store: no wake-up is lost.
package shmring

import (
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
	offWantRoom = 64
	offHead     = 128
	offSleeping = 192
)

// typePad is the record type that fills the end of the data area.
const typePad = 0

// The header word's fields.
const (
	hdrTypeShift = 32
	hdrAuxShift  = 48
	hdrReady     = 1 << 47
	hdrTypeMask  = 1<<15 - 1
)

// MaxType is the largest record type.
const MaxType = hdrTypeMask

func makeHeader(n uint32, typ, aux uint16) uint64 {
	return uint64(n) | uint64(typ)<<hdrTypeShift | uint64(aux)<<hdrAuxShift | hdrReady
}

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
	head               *uint64
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

// header returns the header word at data index idx (a multiple of 8).
func (r *ring) header(idx uint64) *uint64 { return headerWord(r.data, idx) }

// Producer is the writing side of a ring. It is not safe for concurrent
// use.
type Producer struct {
	r         ring
	pos       uint64 // bytes reserved
	published uint64 // bytes published
	headSeen  uint64 // head as last read (validated)
	bell      Bell   // the consumer's data doorbell
	// The first record reserved since the last Publish: where its header
	// goes and what Publish stores there.
	gate    uint64
	gateHdr uint64
	last    uint64 // pos before the last Reserve (Unreserve)
}

// NewProducer returns the producer of a new ring in mem (Size(dataSize)
// bytes, 8-byte aligned, zeroed); bell wakes the consumer.
func NewProducer(mem []byte, bell Bell) (*Producer, error) {
	r, err := newRing(mem)
	if err != nil {
		return nil, err
	}
	return &Producer{r: r, bell: bell}, nil
}

// MaxPayload is the longest payload one record carries.
func (p *Producer) MaxPayload() int { return int(p.r.maxRecord) - HeaderSize }

// room refreshes the consumer's head and reports whether need bytes, and
// the header word that follows them, fit after pos.
func (p *Producer) room(need uint64) (bool, error) {
	need += HeaderSize
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

// Reserve appends a record of type typ (1 to MaxType) with aux and an
// n-byte payload, and returns the payload for the caller to fill before
// Publish. It returns nil and no error when the ring has no room now, and
// ErrTooLarge for a payload over MaxPayload or a type out of range.
func (p *Producer) Reserve(typ, aux uint16, n int) ([]byte, error) {
	p.last = p.pos
	if n < 0 || n > p.MaxPayload() || typ == typePad || typ > MaxType {
		return nil, ErrTooLarge
	}
	total, pad := p.span(n)
	ok, err := p.room(total + pad)
	if !ok {
		return nil, err
	}
	if pad > 0 {
		p.putHeader(makeHeader(uint32(pad-HeaderSize), typePad, 0))
		p.pos += pad
	}
	idx := p.pos & p.r.mask
	p.putHeader(makeHeader(uint32(n), typ, aux))
	p.pos += total
	// The word after the record reads as "not ready" until the next
	// record's header is stored there.
	storeUnordered(p.r.header(p.pos&p.r.mask), 0)
	return p.r.data[idx+HeaderSize : idx+HeaderSize+uint64(n) : idx+HeaderSize+uint64(n)], nil
}

// Unreserve takes back the record the last Reserve appended (and the pad
// before it), which must not be published yet: the next Reserve takes its
// place. It does nothing after a Publish or when the last Reserve
// returned nil.
func (p *Producer) Unreserve() {
	if p.last < p.published || p.last >= p.pos {
		return
	}
	p.pos = p.last
	if p.pos != p.published {
		// The record's header (or its pad's) was stored: make the word
		// read as "not ready" again. The first record of a publication
		// keeps its header for Publish, which now does nothing.
		storeUnordered(p.r.header(p.pos&p.r.mask), 0)
	}
}

// putHeader stores the header of the record at pos, or keeps it for
// Publish if the record is the first of its publication.
func (p *Producer) putHeader(h uint64) {
	idx := p.pos & p.r.mask
	if p.pos == p.published {
		p.gate, p.gateHdr = idx, h
		return
	}
	storeUnordered(p.r.header(idx), h)
}

// Publish makes the records reserved so far visible to the consumer and
// rings its doorbell if it sleeps.
func (p *Producer) Publish() {
	if p.pos == p.published {
		return
	}
	p.published = p.pos
	raceRelease()
	Store64(p.r.header(p.gate), p.gateHdr)
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
	bell      Bell   // the producer's room doorbell
	err       error
}

// NewConsumer returns the consumer of the ring in mem, starting at the
// head it holds (0 in a new ring); bell wakes the producer when it waits
// for room.
func NewConsumer(mem []byte, bell Bell) (*Consumer, error) {
	r, err := newRing(mem)
	if err != nil {
		return nil, err
	}
	h := Load64(r.head)
	if h%8 != 0 {
		return nil, ErrCorrupt
	}
	return &Consumer{r: r, pos: h, published: h, bell: bell}, nil
}

// Record is one record as the consumer found it. Payload is a view of the
// shared ring, valid until the next Publish; the peer may change its bytes
// meanwhile.
type Record struct {
	Type, Aux uint16
	Payload   []byte
}

// Next returns the next record. ok is false when none is published; err is
// ErrCorrupt (and stays so) when the ring is inconsistent. Consuming a
// record frees its room only at the next Publish.
func (c *Consumer) Next() (rec Record, ok bool, err error) {
	if c.err != nil {
		return Record{}, false, c.err
	}
	for {
		idx := c.pos & c.r.mask
		h := Load64(c.r.header(idx))
		if h&hdrReady == 0 {
			return Record{}, false, nil
		}
		raceAcquire()
		n := uint64(uint32(h))
		typ := uint16(h>>hdrTypeShift) & hdrTypeMask
		aux := uint16(h >> hdrAuxShift)
		if typ == typePad {
			// A pad ends the data area and is shorter than the record
			// that did not fit: never at offset 0, never two in a row.
			span := c.r.size - idx
			if n+HeaderSize != span || span >= c.r.maxRecord {
				c.err = ErrCorrupt
				return Record{}, false, c.err
			}
			c.pos += span
			continue
		}
		total := align8(HeaderSize + n)
		if total > c.r.maxRecord || total > c.r.size-idx {
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
// out: the head moves past them, so the producer sees (Consumed) that this
// consumer will never look at them. A consumer that stops for good calls
// it last. It does nothing on a corrupt ring, and it publishes only what
// it found valid.
func (c *Consumer) Abandon() {
	// At most a ring's worth: the producer may go on publishing.
	for limit := c.published + c.r.size; c.err == nil && c.pos < limit; {
		if _, ok, _ := c.Next(); !ok {
			break
		}
	}
	if c.err == nil {
		c.Publish()
	}
}

// Unconsumed reports whether the producer published records this consumer
// has not consumed and published (Publish). It reads only shared memory
// (the head and the header there), so it may run concurrently with Next
// and Publish (in another goroutine than the one consuming).
func (c *Consumer) Unconsumed() bool {
	idx := Load64(c.r.head) & c.r.mask &^ 7
	return Load64(c.r.header(idx))&hdrReady != 0
}

// Arm asks the producer to ring the consumer's doorbell at its next
// Publish (the consumer is about to stop looking at the ring and wait for
// the doorbell elsewhere, in a readiness set for instance). It reports
// whether a record is ready already: the caller must then consume it
// (Disarm first), since the producer may have published it before it saw
// the flag. Like Next, it is for the consuming goroutine.
func (c *Consumer) Arm() bool {
	Store32(c.r.sleeping, 1)
	return Load64(c.r.header(c.pos&c.r.mask))&hdrReady != 0
}

// Disarm withdraws Arm: the producer rings no more.
func (c *Consumer) Disarm() { Store32(c.r.sleeping, 0) }

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
