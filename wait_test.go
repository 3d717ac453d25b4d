package nd_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/godirect/nd"
)

// scriptedCQ is a completion queue whose GetResults finds nothing for its
// first empty polls and then the Result res, and whose Notify returns
// notifyErr, or waits for arrive (closed when a completion arrives) or
// ctx, as a provider's Notify does.
type scriptedCQ struct {
	mu        sync.Mutex
	empty     int // polls left that find nothing
	res       *nd.Result
	polls     int
	notifies  int
	notifyErr error
	arrive    chan struct{}
	waiting   chan struct{} // if not nil, closed by the first Notify that waits
}

func (q *scriptedCQ) GetResults(results []*nd.Result) int {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.polls++
	if q.empty > 0 {
		q.empty--
		return 0
	}
	if q.res == nil || len(results) == 0 {
		return 0
	}
	results[0], q.res = q.res, nil
	return 1
}

func (q *scriptedCQ) Notify(ctx context.Context, typ nd.NotifyType) error {
	q.mu.Lock()
	q.notifies++
	err, arrive, waiting := q.notifyErr, q.arrive, q.waiting
	q.waiting = nil
	q.mu.Unlock()
	if err != nil {
		return err
	}
	if waiting != nil {
		close(waiting)
	}
	select {
	case <-arrive:
		return nil
	case <-ctx.Done():
		return &nd.OpError{Op: "Notify", Status: nd.ErrCanceled, Err: ctx.Err()}
	}
}

func (q *scriptedCQ) Resize(int) error { return nd.ErrNotSupported }
func (q *scriptedCQ) Close() error     { return nil }

// counts returns the polls and Notify calls made so far.
func (q *scriptedCQ) counts() (polls, notifies int) {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.polls, q.notifies
}

func TestWaitResultsTakesWhatIsQueued(t *testing.T) {
	want := &nd.Result{}
	q := &scriptedCQ{res: want}
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // a queued completion is returned all the same
	var out [4]*nd.Result
	n, err := nd.WaitResults(ctx, q, out[:])
	if n != 1 || err != nil || out[0] != want {
		t.Fatalf("WaitResults = %d, %v, %p; want 1, nil, %p", n, err, out[0], want)
	}
	if polls, notifies := q.counts(); polls != 1 || notifies != 0 {
		t.Fatalf("WaitResults polled %d times and notified %d; want 1 and 0", polls, notifies)
	}
}

func TestWaitResultsPollsForSpinThenBlocks(t *testing.T) {
	want := &nd.Result{}
	// Spin: the completion comes after 100 empty polls, without Notify.
	q := &scriptedCQ{empty: 100, res: want}
	var out [1]*nd.Result
	n, err := nd.Waiter{Spin: time.Hour}.WaitResults(context.Background(), q, out[:])
	if n != 1 || err != nil || out[0] != want {
		t.Fatalf("WaitResults with Spin = %d, %v; want the completion", n, err)
	}
	if polls, notifies := q.counts(); polls != 101 || notifies != 0 {
		t.Fatalf("WaitResults with Spin polled %d times and notified %d; want 101 and 0", polls, notifies)
	}

	// No spin: one empty poll, then Notify, which returns once the
	// completion arrives.
	q = &scriptedCQ{empty: 1, res: want, arrive: make(chan struct{}), waiting: make(chan struct{})}
	waiting := q.waiting
	done := make(chan error, 1)
	go func() {
		_, err := nd.WaitResults(context.Background(), q, out[:])
		done <- err
	}()
	select {
	case <-waiting:
	case err := <-done:
		t.Fatalf("WaitResults returned %v before its Notify", err)
	}
	close(q.arrive)
	if err := <-done; err != nil || out[0] != want {
		t.Fatalf("WaitResults after the arrival = %v, %p; want nil, %p", err, out[0], want)
	}
	if polls, notifies := q.counts(); polls != 2 || notifies != 1 {
		t.Fatalf("WaitResults polled %d times and notified %d; want 2 and 1", polls, notifies)
	}
}

func TestWaitResultsErrors(t *testing.T) {
	q := &scriptedCQ{}
	var ae *nd.ArgError
	if _, err := nd.WaitResults(context.Background(), q, nil); !errors.As(err, &ae) || ae.Arg != "results" || !errors.Is(err, nd.ErrInvalidParameter) {
		t.Errorf("WaitResults(nil results) = %v; want an *nd.ArgError for results", err)
	}

	// A queue that fails Notify (overrun, closed): its error, as is.
	q = &scriptedCQ{notifyErr: nd.ErrBufferOverflow}
	if n, err := nd.WaitResults(context.Background(), q, make([]*nd.Result, 1)); n != 0 || err != nd.ErrBufferOverflow {
		t.Errorf("WaitResults on an overrun queue = %d, %v; want 0, ErrBufferOverflow", n, err)
	}

	// The context ends while blocked in Notify.
	q = &scriptedCQ{arrive: make(chan struct{})}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	if _, err := nd.WaitResults(ctx, q, make([]*nd.Result, 1)); !errors.Is(err, nd.ErrCanceled) || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("WaitResults past its deadline = %v; want ErrCanceled and context.DeadlineExceeded", err)
	}

	// The context ends while polling without end.
	q = &scriptedCQ{}
	ctx, cancel = context.WithCancel(context.Background())
	cancel()
	var oe *nd.OpError
	_, err := nd.Waiter{Spin: -1}.WaitResults(ctx, q, make([]*nd.Result, 1))
	if !errors.As(err, &oe) || oe.Op != "WaitResults" || !errors.Is(err, nd.ErrCanceled) || !errors.Is(err, context.Canceled) {
		t.Errorf("WaitResults polling with a canceled context = %v; want an *nd.OpError of WaitResults, ErrCanceled and context.Canceled", err)
	}
	if polls, notifies := q.counts(); polls < 4096 || notifies != 0 {
		t.Errorf("WaitResults polled %d times and notified %d before it looked at the context; want 4096 and 0", polls, notifies)
	}
}

// TestWaitResultsAllocatesNothingWhilePolling: the fast path (a completion
// queued) and the polling path allocate nothing.
func TestWaitResultsAllocatesNothingWhilePolling(t *testing.T) {
	ctx := context.Background()
	res := &nd.Result{}
	q := &scriptedCQ{}
	out := make([]*nd.Result, 1)
	for _, w := range []nd.Waiter{{}, {Spin: -1}, {Spin: time.Hour}} {
		allocs := testing.AllocsPerRun(100, func() {
			q.res, q.empty = res, 50 // for {}: no empty poll, it would block
			if w.Spin == 0 {
				q.empty = 0
			}
			if n, err := w.WaitResults(ctx, q, out); n != 1 || err != nil {
				t.Fatalf("WaitResults = %d, %v", n, err)
			}
		})
		if allocs != 0 {
			t.Errorf("Waiter{Spin: %v}.WaitResults: %v allocations per call, want 0", w.Spin, allocs)
		}
	}
}
