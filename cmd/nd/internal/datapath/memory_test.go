package datapath

import (
	"testing"
)

func TestLoadByte(t *testing.T) {
	for _, size := range []int{1, 3, 4, 5, 4096 + 3} {
		buf := WordAligned(size)
		if len(buf) < size || len(buf)%4 != 0 {
			t.Fatalf("wordAligned(%d) has %d bytes", size, len(buf))
		}
		for i := range buf {
			buf[i] = byte(i*13 + 7)
		}
		for i := range buf {
			if got := LoadByte(buf, i); got != buf[i] {
				t.Errorf("size %d: loadByte(%d) = %#x, want %#x", size, i, got, buf[i])
			}
		}
	}
}

func TestStamps(t *testing.T) {
	prevPing, prevPong := Stamps(-1 + 1000*127) // any earlier round
	for k := range 1000 {
		ping, pong := Stamps(k)
		if ping == 0 || pong == 0 || ping == pong || ping == prevPing || pong == prevPong {
			t.Fatalf("round %d: stamps %d, %d after %d, %d", k, ping, pong, prevPing, prevPong)
		}
		prevPing, prevPong = ping, pong
	}
}
