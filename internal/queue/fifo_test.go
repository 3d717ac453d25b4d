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
