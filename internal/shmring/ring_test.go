package shmring

import (
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"sync"
	"testing"
	"time"
)

// newMem returns zeroed, 8-byte aligned memory for a ring with dataSize
// bytes of data. Go heap memory (rather than a mapping) lets the race
// detector check the ring's synchronisation.
func newMem(dataSize int) []byte {
	w := make([]uint64, Size(dataSize)/8)
	return u64bytes(w)
}

func TestSingleGoroutine(t *testing.T) {
	mem := newMem(MinDataSize)
	p, err := NewProducer(mem, nil)
	if err != nil {
		t.Fatal(err)
	}
	c, err := NewConsumer(mem, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok, err := c.Next(); ok || err != nil {
		t.Fatalf("empty ring: ok=%v err=%v", ok, err)
	}
	// Enough records of varied sizes to wrap many times.
	for i := 0; i < 10000; i++ {
		n := (i * 37) % (p.MaxPayload() + 1)
		b, err := p.Reserve(uint16(i%100+1), uint16(i), n)
		if err != nil {
			t.Fatal(err)
		}
		if b == nil {
			// Full: drain.
			p.Publish()
			for {
				_, ok, err := c.Next()
				if err != nil {
					t.Fatal(err)
				}
				if !ok {
					break
				}
			}
			c.Publish()
			if b, err = p.Reserve(uint16(i%100+1), uint16(i), n); b == nil || err != nil {
				t.Fatalf("no room in an empty ring for %d bytes: %v", n, err)
			}
		}
		for j := range b {
			b[j] = byte(i + j)
		}
		p.Publish()
		r, ok, err := c.Next()
		if err != nil || !ok {
			t.Fatalf("record %d: ok=%v err=%v", i, ok, err)
		}
		if r.Type != uint16(i%100+1) || r.Aux != uint16(i) || len(r.Payload) != n {
			t.Fatalf("record %d: type %d aux %d len %d", i, r.Type, r.Aux, len(r.Payload))
		}
		for j, x := range r.Payload {
			if x != byte(i+j) {
				t.Fatalf("record %d byte %d = %d", i, j, x)
			}
		}
		c.Publish()
	}
	if _, err := p.Reserve(1, 0, p.MaxPayload()+1); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("oversized record: %v", err)
	}
}

// chanBell is a doorbell made of a channel, for tests.
type chanBell struct {
	c      chan struct{}
	closed chan struct{}
}

func newChanBell() *chanBell {
	return &chanBell{c: make(chan struct{}, 1), closed: make(chan struct{})}
}

func (b *chanBell) Ring() {
	select {
	case b.c <- struct{}{}:
	default:
	}
}

func (b *chanBell) Wait() error {
	select {
	case <-b.c:
		return nil
	case <-b.closed:
		return errors.New("closed")
	}
}

// testStream moves count records from a producer goroutine to a consumer
// goroutine, with both sides sleeping on their doorbells, and checks every
// byte.
func testStream(t *testing.T, dataBell, roomBell interface {
	Bell
	Waiter
}, spin time.Duration, count int) {
	mem := newMem(MinDataSize)
	p, _ := NewProducer(mem, dataBell)
	c, _ := NewConsumer(mem, roomBell)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		rng := rand.New(rand.NewPCG(1, 2))
		for i := 0; i < count; i++ {
			n := rng.IntN(p.MaxPayload() + 1)
			if i%3 == 0 {
				n = rng.IntN(16)
			}
			var b []byte
			for {
				var err error
				b, err = p.Reserve(7, uint16(i), n)
				if err != nil {
					t.Error(err)
					return
				}
				if b != nil {
					break
				}
				if err := p.WaitRoom(n, roomBell, spin); err != nil {
					t.Error(err)
					return
				}
			}
			if n >= 2 {
				binary.LittleEndian.PutUint16(b, uint16(n))
			}
			for j := 2; j < n; j++ {
				b[j] = byte(i ^ j)
			}
			if i%4 == 0 || n > 100 {
				p.Publish()
			}
		}
		p.Publish()
	}()
	for i := 0; i < count; {
		r, ok, err := c.Next()
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			c.Publish()
			if err := c.Wait(dataBell, spin); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if r.Aux != uint16(i) || r.Type != 7 {
			t.Fatalf("record %d: aux %d type %d", i, r.Aux, r.Type)
		}
		for j := 2; j < len(r.Payload); j++ {
			if r.Payload[j] != byte(i^j) {
				t.Fatalf("record %d byte %d", i, j)
			}
		}
		i++
		if i%5 == 0 {
			c.Publish()
		}
	}
	c.Publish()
	wg.Wait()
}

func TestCrossGoroutineChannelBells(t *testing.T) {
	for _, spin := range []time.Duration{0, 20 * time.Microsecond} {
		testStream(t, newChanBell(), newChanBell(), spin, 20000)
	}
}

func TestCrossGoroutineEventfd(t *testing.T) {
	d1, err := NewDoorbell()
	if err != nil {
		t.Fatal(err)
	}
	defer d1.Close()
	d2, err := NewDoorbell()
	if err != nil {
		t.Fatal(err)
	}
	defer d2.Close()
	testStream(t, d1, d2, 0, 20000)
}

func TestDoorbellClose(t *testing.T) {
	d, err := NewDoorbell()
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error)
	go func() { done <- d.Wait() }()
	d.Close()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("Wait returned nil after Close")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Wait did not return after Close")
	}
	d.Ring() // ignored
}

func TestNotEventfd(t *testing.T) {
	if IsEventfd(0) {
		t.Fatal("stdin is an eventfd?")
	}
}

// TestHostileIndices: indices a peer could store never lead outside the
// ring, only to ErrCorrupt.
func TestHostileIndices(t *testing.T) {
	for _, tc := range []struct{ head, tail uint64 }{
		{0, 3}, {0, 1 << 40}, {100, 50}, {0, MinDataSize + 8}, {^uint64(0), 8},
	} {
		mem := newMem(MinDataSize)
		c, _ := NewConsumer(mem, nil)
		Store64(Word64(mem, offTail), tc.tail)
		if _, _, err := c.Next(); !errors.Is(err, ErrCorrupt) {
			t.Errorf("tail %d: %v, want ErrCorrupt", tc.tail, err)
		}
		mem = newMem(MinDataSize)
		p, _ := NewProducer(mem, nil)
		for {
			b, err := p.Reserve(1, 0, 100)
			if err != nil || b == nil {
				break
			}
		}
		p.Publish()
		Store64(Word64(mem, offHead), p.published+8+tc.head%1024)
		if _, err := p.Reserve(1, 0, 100); !errors.Is(err, ErrCorrupt) {
			t.Errorf("head beyond tail: %v, want ErrCorrupt", err)
		}
	}
}

// TestConsumedAndAbandon: Consumed follows what the consumer published
// (and only that: a record taken but not published is not consumed),
// Abandon gives up every published record at once, and a head moved
// backwards or past the tail is ErrCorrupt.
func TestConsumedAndAbandon(t *testing.T) {
	mem := newMem(MinDataSize)
	p, _ := NewProducer(mem, nil)
	c, _ := NewConsumer(mem, nil)
	var ends []uint64
	for i := range 3 {
		if b, err := p.Reserve(1, 0, 100); b == nil {
			t.Fatalf("record %d: %v", i, err)
		}
		ends = append(ends, p.Reserved())
	}
	p.Publish()
	if h, err := p.Consumed(); h != 0 || err != nil {
		t.Fatalf("Consumed = %d, %v before the consumer looked", h, err)
	}
	if _, ok, _ := c.Next(); !ok {
		t.Fatal("no record")
	}
	if h, _ := p.Consumed(); h != 0 {
		t.Fatalf("Consumed = %d before the consumer published", h)
	}
	c.Publish()
	if h, _ := p.Consumed(); h != ends[0] {
		t.Fatalf("Consumed = %d, want %d (the end of the first record)", h, ends[0])
	}
	c.Abandon()
	if h, _ := p.Consumed(); h != ends[2] {
		t.Fatalf("Consumed = %d after Abandon, want %d (everything published)", h, ends[2])
	}
	if _, ok, err := c.Next(); ok || err != nil {
		t.Fatalf("a record after Abandon: ok=%v err=%v", ok, err)
	}
	Store64(Word64(mem, offHead), 8) // backwards
	if _, err := p.Consumed(); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("a head moved back: %v, want ErrCorrupt", err)
	}
	p2, _ := NewProducer(mem, nil)
	Store64(Word64(mem, offHead), ends[2]+8) // past the tail
	if _, err := p2.Consumed(); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("a head past the tail: %v, want ErrCorrupt", err)
	}
}
