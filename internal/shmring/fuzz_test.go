package shmring

import (
	"testing"
	"unsafe"
)

// FuzzConsumer fills a ring's memory with the fuzzer's bytes, as a hostile
// peer could, and reads records until the ring is empty or corrupt. No
// input may panic, and every payload must lie inside the data area.
func FuzzConsumer(f *testing.F) {
	// A valid ring with a few records and a wrap as the seed.
	mem := newMem(MinDataSize)
	p, _ := NewProducer(mem, nil)
	c, _ := NewConsumer(mem, nil)
	for i := 0; i < 40; i++ {
		b, _ := p.Reserve(uint16(i+1), 0, i*23)
		if b == nil {
			p.Publish()
			for {
				if _, ok, _ := c.Next(); !ok {
					break
				}
			}
			c.Publish()
			continue
		}
		p.Publish()
	}
	f.Add(uint64(c.pos), append([]byte(nil), mem[:ControlSize+512]...))
	f.Add(uint64(0), []byte{})
	f.Fuzz(func(t *testing.T, start uint64, b []byte) {
		mem := newMem(MinDataSize)
		copy(mem, b)
		start &^= 7
		Store64(Word64(mem, offHead), start)
		c, err := NewConsumer(mem, nil)
		if err != nil {
			t.Fatal(err)
		}
		lo := uintptr(unsafe.Pointer(&mem[ControlSize]))
		hi := lo + MinDataSize
		for i := 0; i < 2*MinDataSize/HeaderSize+2; i++ {
			r, ok, err := c.Next()
			if err != nil || !ok {
				return
			}
			if len(r.Payload) > 0 {
				a := uintptr(unsafe.Pointer(&r.Payload[0]))
				if a < lo || a+uintptr(len(r.Payload)) > hi {
					t.Fatalf("payload [%#x,+%d) outside the data area [%#x,%#x)", a, len(r.Payload), lo, hi)
				}
			}
			if r.Type == typePad {
				t.Fatal("pad record returned")
			}
		}
	})
}
