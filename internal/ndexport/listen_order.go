package ndexport

import (
	"context"

	"github.com/godirect/nd"
)

// requestQueue is a listener that takes GetConnectionRequest in two halves
// (the engine's): the call is queued at once, and waited for later.
type requestQueue interface {
	QueueConnectionRequest(c nd.Connector) func(ctx context.Context) error
}

// queueConnectionRequest is the begin half of GetConnectionRequest(c) on l
// for startInOrder: ND hands requests to GetConnectionRequest calls in the
// order they were made, and each call's wait runs on its own goroutine, so
// the call must join l's queue before it returns. A listener that cannot
// queue ahead is called from the wait itself.
func queueConnectionRequest(l nd.Listener, c nd.Connector) func() func(ctx context.Context) nd.Status {
	return func() func(ctx context.Context) nd.Status {
		q, ok := l.(requestQueue)
		if !ok {
			return func(ctx context.Context) nd.Status { return status(l.GetConnectionRequest(ctx, c)) }
		}
		wait := q.QueueConnectionRequest(c)
		return func(ctx context.Context) nd.Status { return status(wait(ctx)) }
	}
}
