// Package queue holds the growable first-in first-out ring that the
// transports keep their requests in (sent and waiting for the peer's
// acknowledgment, Read Requests outstanding).
package queue

// FIFO is a growable ring of values: once it has grown to its working
// size, pushing and popping allocate nothing. The zero value is an empty
// queue. It is not safe for concurrent use.
type FIFO[T any] struct {
	buf     []T
	head, n int
}

// minGrow is the capacity of the first allocation: a connection's few
// outstanding requests fit without growing again.
const minGrow = 16

// Reserve makes room for n values without growing again, so that a
// queue created with its connection allocates nothing on the connection's
// first requests.
func (q *FIFO[T]) Reserve(n int) {
	if n > len(q.buf) {
		q.grow(n)
	}
}

// Len returns the number of values queued.
func (q *FIFO[T]) Len() int { return q.n }

// Push appends v at the tail.
func (q *FIFO[T]) Push(v T) {
	if q.n == len(q.buf) {
		q.grow(max(minGrow, 2*len(q.buf)))
	}
	q.buf[(q.head+q.n)%len(q.buf)] = v
	q.n++
}

// grow moves the queued values, in order, to a new ring of size values.
func (q *FIFO[T]) grow(size int) {
	grown := make([]T, size)
	for i := 0; i < q.n; i++ {
		grown[i] = q.buf[(q.head+i)%len(q.buf)]
	}
	q.buf, q.head = grown, 0
}

// At returns the i-th value from the head (0 <= i < Len()), in place.
func (q *FIFO[T]) At(i int) *T { return &q.buf[(q.head+i)%len(q.buf)] }

// Pop removes and returns the value at the head; the queue must not be
// empty. The slot is cleared, so the queue keeps no reference to it.
func (q *FIFO[T]) Pop() T {
	v := q.buf[q.head]
	var zero T
	q.buf[q.head] = zero
	q.head = (q.head + 1) % len(q.buf)
	q.n--
	return v
}

// Drain pops every value and returns them in order, appended to dst.
func (q *FIFO[T]) Drain(dst []T) []T {
	for q.n > 0 {
		dst = append(dst, q.Pop())
	}
	return dst
}
