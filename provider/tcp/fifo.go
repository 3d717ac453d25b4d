package tcp

// fifo is a growable ring: after it reached its working size, pushing and
// popping allocate nothing.
type fifo[T any] struct {
	buf     []T
	head, n int
}

func (q *fifo[T]) len() int { return q.n }

func (q *fifo[T]) push(v T) {
	if q.n == len(q.buf) {
		grown := make([]T, max(8, 2*len(q.buf)))
		for i := 0; i < q.n; i++ {
			grown[i] = q.buf[(q.head+i)%len(q.buf)]
		}
		q.buf, q.head = grown, 0
	}
	q.buf[(q.head+q.n)%len(q.buf)] = v
	q.n++
}

// at returns the i-th element from the head.
func (q *fifo[T]) at(i int) *T { return &q.buf[(q.head+i)%len(q.buf)] }

func (q *fifo[T]) pop() T {
	v := q.buf[q.head]
	var zero T
	q.buf[q.head] = zero
	q.head = (q.head + 1) % len(q.buf)
	q.n--
	return v
}

// drain pops every element and returns them in order, appended to dst.
func (q *fifo[T]) drain(dst []T) []T {
	for q.n > 0 {
		dst = append(dst, q.pop())
	}
	return dst
}
