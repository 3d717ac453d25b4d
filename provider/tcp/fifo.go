package tcp

import "github.com/godirect/nd/internal/queue"

// fifo is the transports' shared growable ring (queue.FIFO) under the
// names this package's code uses.
type fifo[T any] struct{ q queue.FIFO[T] }

func (f *fifo[T]) len() int          { return f.q.Len() }
func (f *fifo[T]) push(v T)          { f.q.Push(v) }
func (f *fifo[T]) at(i int) *T       { return f.q.At(i) }
func (f *fifo[T]) pop() T            { return f.q.Pop() }
func (f *fifo[T]) drain(dst []T) []T { return f.q.Drain(dst) }
