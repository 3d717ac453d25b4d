package queue

import "testing"

// TestFIFOOrder: values come out in the order they went in, across growth
// and wrap-around, and At sees them in place.
func TestFIFOOrder(t *testing.T) {
	var q FIFO[int]
	next, want := 0, 0
	for round := range 200 {
		for range round % 37 {
			q.Push(next)
			next++
		}
		for i := range q.Len() {
			if got := *q.At(i); got != want+i {
				t.Fatalf("At(%d) = %d, want %d", i, got, want+i)
			}
		}
		for range round % 23 {
			if q.Len() == 0 {
				break
			}
			if got := q.Pop(); got != want {
				t.Fatalf("Pop = %d, want %d", got, want)
			}
			want++
		}
	}
	rest := q.Drain(nil)
	for i, v := range rest {
		if v != want+i {
			t.Fatalf("Drain[%d] = %d, want %d", i, v, want+i)
		}
	}
	if q.Len() != 0 || want+len(rest) != next {
		t.Fatalf("%d left, %d of %d values out", q.Len(), want+len(rest), next)
	}
}

// TestFIFOAllocatesNothing: a queue at its working size allocates nothing.
func TestFIFOAllocatesNothing(t *testing.T) {
	var q FIFO[*int]
	x := new(int)
	for range 8 {
		q.Push(x)
	}
	for q.Len() > 0 {
		q.Pop()
	}
	if n := testing.AllocsPerRun(100, func() {
		for range 8 {
			q.Push(x)
		}
		for q.Len() > 0 {
			q.Pop()
		}
	}); n != 0 {
		t.Fatalf("%v allocations per round, want 0", n)
	}
}

// TestFIFOReserve: after Reserve(n) the ring holds n values without
// growing, and values queued before it keep their order.
func TestFIFOReserve(t *testing.T) {
	var q FIFO[int]
	for i := range 10 {
		q.Push(i)
	}
	for range 7 {
		q.Pop()
	}
	for i := 10; i < 20; i++ {
		q.Push(i) // wraps around the first ring of minGrow
	}
	q.Reserve(64)
	if len(q.buf) < 64 {
		t.Fatalf("Reserve(64): room for %d", len(q.buf))
	}
	for want := 7; want < 20; want++ {
		if got := q.Pop(); got != want {
			t.Fatalf("Pop = %d, want %d", got, want)
		}
	}
	q.Reserve(8) // smaller than the ring: no change
	if len(q.buf) < 64 {
		t.Fatalf("Reserve(8) shrank the ring to %d", len(q.buf))
	}
}
