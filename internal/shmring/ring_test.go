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

// TestHostileHeaders: headers a peer could store never lead outside the
// ring, only to ErrCorrupt; a head a peer could store only to ErrCorrupt
// at the producer.
func TestHostileHeaders(t *testing.T) {
	quarter := uint32(MinDataSize / 4)
	for _, tc := range []struct {
		name string
		at   uint64 // data index of the header
		hdr  uint64
	}{
		{"longer than a quarter", 0, makeHeader(quarter, 1, 0)},
		{"huge", 0, makeHeader(^uint32(0), 1, 0)},
		{"across the end", MinDataSize - 64, makeHeader(100, 1, 0)},
		{"pad at offset 0", 0, makeHeader(MinDataSize-HeaderSize, typePad, 0)},
		{"pad short of the end", MinDataSize - 64, makeHeader(16, typePad, 0)},
		{"pad past the end", MinDataSize - 64, makeHeader(64, typePad, 0)},
	} {
		mem := newMem(MinDataSize)
		c, _ := NewConsumer(mem, nil)
		c.pos, c.published = tc.at, tc.at
		Store64(headerWord(mem[ControlSize:], tc.at), tc.hdr)
		if _, _, err := c.Next(); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: %v, want ErrCorrupt", tc.name, err)
		}
		if _, _, err := c.Next(); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: the second Next: %v, want ErrCorrupt (it stays)", tc.name, err)
		}
	}
	mem := newMem(MinDataSize)
	Store64(Word64(mem, offHead), 12)
	if _, err := NewConsumer(mem, nil); !errors.Is(err, ErrCorrupt) {
		t.Errorf("a head not a multiple of 8: %v, want ErrCorrupt", err)
	}
	for _, extra := range []uint64{3, 8, 1 << 40} {
		mem := newMem(MinDataSize)
		p, _ := NewProducer(mem, nil)
		for {
			b, err := p.Reserve(1, 0, 100)
			if err != nil || b == nil {
				break
			}
		}
		p.Publish()
		Store64(Word64(mem, offHead), p.published+extra)
		if _, err := p.Reserve(1, 0, 100); !errors.Is(err, ErrCorrupt) {
			t.Errorf("head %d past what was published: %v, want ErrCorrupt", extra, err)
		}
	}
}

// TestOldBytesNeverReady: payloads whose every word looks like a ready
// header, lap after lap, never show up as records: the consumer gets
// exactly the records published, in order, and then an empty ring.
func TestOldBytesNeverReady(t *testing.T) {
	mem := newMem(MinDataSize)
	p, _ := NewProducer(mem, nil)
	c, _ := NewConsumer(mem, nil)
	fake := makeHeader(8, 7, 7)
	sent, got := 0, 0
	for lap := 0; lap < 50; lap++ {
		for i := 0; i < 7; i++ {
			n := 8 + (sent*13)%300
			b, err := p.Reserve(1, uint16(sent), n)
			if err != nil {
				t.Fatal(err)
			}
			if b == nil {
				break
			}
			for j := 0; j+8 <= n; j += 8 {
				binary.LittleEndian.PutUint64(b[j:], fake)
			}
			sent++
		}
		if _, ok, _ := c.Next(); ok {
			t.Fatal("a record before Publish")
		}
		p.Publish()
		for {
			r, ok, err := c.Next()
			if err != nil {
				t.Fatal(err)
			}
			if !ok {
				break
			}
			if r.Type != 1 || r.Aux != uint16(got) {
				t.Fatalf("record %d: type %d aux %d", got, r.Type, r.Aux)
			}
			got++
		}
		c.Publish()
		if got != sent {
			t.Fatalf("lap %d: %d records taken, %d published", lap, got, sent)
		}
		if c.Unconsumed() {
			t.Fatalf("lap %d: Unconsumed on an empty ring", lap)
		}
	}
}

// TestConsumedAndAbandon: Consumed follows what the consumer published
// (and only that: a record taken but not published is not consumed),
// Abandon gives up every published record at once, and a head moved
// backwards or past what was published is ErrCorrupt.
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
	Store64(Word64(mem, offHead), ends[2]+8) // past what was published
	if _, err := p2.Consumed(); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("a head past what was published: %v, want ErrCorrupt", err)
	}
}

// TestUnreserve: a record taken back is never seen, whether it was the
// first of its publication (its header kept for Publish), a later one
// (its header stored) or one behind a pad; the next record takes its
// place; Unreserve does nothing after a Reserve that found no room or
// after Publish.
func TestUnreserve(t *testing.T) {
	mem := newMem(MinDataSize)
	p, _ := NewProducer(mem, nil)
	c, _ := NewConsumer(mem, nil)
	expect := func(want ...uint16) {
		t.Helper()
		for _, aux := range want {
			r, ok, err := c.Next()
			if err != nil || !ok || r.Type != 1 || r.Aux != aux || len(r.Payload) != int(aux)%200 {
				t.Fatalf("record aux %d: ok=%v err=%v type %d aux %d len %d", aux, ok, err, r.Type, r.Aux, len(r.Payload))
			}
			for _, x := range r.Payload {
				if x != byte(aux) {
					t.Fatalf("record aux %d: byte %d", aux, x)
				}
			}
		}
		if r, ok, err := c.Next(); ok || err != nil {
			t.Fatalf("after %v: a record more (type %d aux %d) or err %v", want, r.Type, r.Aux, err)
		}
		c.Publish()
	}
	put := func(aux uint16) bool {
		b, err := p.Reserve(1, aux, int(aux)%200)
		if err != nil {
			t.Fatal(err)
		}
		for i := range b {
			b[i] = byte(aux)
		}
		return b != nil
	}
	aux := uint16(1)
	for lap := 0; lap < 400; lap++ {
		// First of a publication, taken back and replaced.
		put(9999)
		p.Unreserve()
		p.Unreserve() // twice: nothing more
		a, b := aux, aux+1
		aux += 2
		put(a)
		// A later record taken back; the one after it takes its place.
		put(9999)
		p.Unreserve()
		put(b)
		p.Publish()
		p.Unreserve() // after Publish: nothing
		expect(a, b)
		// A later record taken back and nothing after it.
		put(a)
		put(9999)
		p.Unreserve()
		p.Publish()
		expect(a)
		if aux > 60000 {
			aux = 1
		}
	}
	// No room: Unreserve after a nil Reserve leaves the earlier records.
	n := 0
	for put(uint16(1000 + n)) {
		n++
	}
	p.Unreserve()
	p.Publish()
	want := make([]uint16, n)
	for i := range want {
		want[i] = uint16(1000 + i)
	}
	expect(want...)
}
