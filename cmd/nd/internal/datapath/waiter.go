package datapath

import (
	"context"
	"fmt"

	"github.com/godirect/nd"
)

// Waiter waits on a completion queue for particular requests to complete,
// blocking in Notify (nd.WaitResults) rather than spinning (for nd rping and perftest's
// rdma_cm control channel, which are not latency tests, and whose peer may
// share the CPU). It remembers completions that arrive before they are
// waited for. A Waiter is used by one goroutine at a time.
type Waiter struct {
	cq      nd.CompletionQueue
	results []*nd.Result
	done    map[*nd.Result]bool
}

// NewWaiter returns a Waiter on cq.
func NewWaiter(cq nd.CompletionQueue) *Waiter {
	return &Waiter{cq: cq, results: make([]*nd.Result, 16), done: make(map[*nd.Result]bool)}
}

// Wait returns once every one of rs has completed, or with an error when ctx
// ends or the queue fails.
func (w *Waiter) Wait(ctx context.Context, rs ...*nd.Result) error {
	for _, r := range rs {
		for !w.done[r] {
			n, err := nd.WaitResults(ctx, w.cq, w.results)
			if err != nil {
				return fmt.Errorf("waiting for completions: %w", err)
			}
			for _, x := range w.results[:n] {
				w.done[x] = true
			}
		}
		delete(w.done, r)
	}
	return nil
}
