package engine

import (
	"github.com/godirect/nd"
	"github.com/godirect/nd/internal/ndrules"
)

// The lifecycle rules every object of the engine follows (docs/semantics.md,
// "Closing objects", states them for users):
//
//   - Closing an object closes every object made from it (an adapter: its
//     listeners, connectors, endpoints, shared receive queues and
//     completion queues; a connector: its endpoint; a completion queue: the
//     shared receive queues created on it) and every endpoint that uses it
//     (a completion queue, a shared receive queue).
//   - Closing an endpoint ends its connection: every request it accepted
//     and has not completed completes ErrCanceled, into its completion
//     queues, which keep taking the completions of requests accepted before
//     they closed, so that GetResults hands each one back exactly once.
//   - A call made after its object, or the object's adapter, closed returns
//     closedStatus at once: ErrDeviceRemoved once the adapter closed,
//     ErrInvalidHandle otherwise. Close itself returns nil, GetResults
//     still drains what the queue holds, and DeregisterMemory is a cleanup
//     that succeeds after the adapter closed.
//   - A blocking call that waits when its object closes returns
//     ErrCanceled, as ND's overlapped requests of a released object do.
//   - A closed object given as a parameter is ErrInvalidParameterN, N its
//     position.

// closedStatus is the status of a call on an object of a that was closed
// itself (closed) or through its adapter, or 0 if neither happened.
func (a *Adapter) closedStatus(closed bool) nd.Status {
	return ndrules.Closed(a.closed.Load(), closed)
}
