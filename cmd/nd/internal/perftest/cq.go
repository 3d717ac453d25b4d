package perftest

// The one completion queue of each side of nd perf. Every endpoint of a
// side (the -q connections) is attached to it, for both directions, as
// perftest attaches its QPs to one CQ and MS-MPI every connection to one
// CQ per adapter. Each connection owns the Results it posts with; a
// completion goes back to its connection by its Result pointer, looked up
// in a map made at set-up: the lookup allocates nothing. With one
// connection nothing is looked up: its complete refuses a Result it does
// not own (datapath.ErrUnexpected), as the map would.

import (
	"context"
	"fmt"

	"github.com/godirect/nd"
	"github.com/godirect/nd/cmd/nd/internal/datapath"
)

// perfReapBatch bounds the completions taken in one GetResults.
const perfReapBatch = 1024

// perfOwner is a connection of one side: it takes the completions of the
// Results it owns.
type perfOwner interface {
	// complete takes the completion of r, one of the owner's Results.
	complete(r *nd.Result) error
	// index is the connection's index among the side's, for errors.
	index() int
}

// perfCQ is a side's completion queue and the owners of its Results. It is
// used by one goroutine.
type perfCQ struct {
	cq     nd.CompletionQueue
	poller *datapath.Reaper // polls, or blocks in Notify with -b
	waiter *datapath.Reaper // blocks in Notify: where a side only waits
	owners map[*nd.Result]perfOwner
	sole   perfOwner // the owner of every Result, while there is one
	mixed  bool      // Results of several owners: look them up
	many   bool      // more than one connection: errors name theirs
}

// newPerfCQ creates a's completion queue for conns endpoints of limits
// each: room for every request they may have outstanding.
func newPerfCQ(ctx context.Context, a nd.Adapter, ai nd.AdapterInfo, limits nd.EndpointLimits, conns int, blocking bool) (*perfCQ, error) {
	entries := conns * (limits.InboundEntries + limits.OutboundEntries)
	if entries > ai.MaxCQEntries {
		return nil, fmt.Errorf("adapter %s: %d connections of %d Receives and %d outbound requests need %d completion queue entries; the adapter allows %d (see -q, -t)",
			a.Address(), conns, limits.InboundEntries, limits.OutboundEntries, entries, ai.MaxCQEntries)
	}
	cq, err := a.CreateCompletionQueue(entries)
	if err != nil {
		return nil, fmt.Errorf("CreateCompletionQueue(%d): %w", entries, err)
	}
	batch := min(entries, perfReapBatch)
	return &perfCQ{
		cq:     cq,
		poller: datapath.NewReaper(ctx, cq, blocking, batch),
		waiter: datapath.NewReaper(ctx, cq, true, batch),
		owners: make(map[*nd.Result]perfOwner),
		many:   conns > 1,
	}, nil
}

// own records o as the owner of rs.
func (q *perfCQ) own(o perfOwner, rs ...*nd.Result) {
	q.noteOwner(o)
	for _, r := range rs {
		q.owners[r] = o
	}
}

// noteOwner keeps sole while every Result has one owner.
func (q *perfCQ) noteOwner(o perfOwner) {
	switch {
	case q.sole == nil && !q.mixed:
		q.sole = o
	case q.sole != o:
		q.sole, q.mixed = nil, true
	}
}

// ownAll records o as the owner of every Result of rs.
func (q *perfCQ) ownAll(o perfOwner, rs []nd.Result) {
	q.noteOwner(o)
	for i := range rs {
		q.owners[&rs[i]] = o
	}
}

// dispatch hands each completion of done to its owner.
func (q *perfCQ) dispatch(done []*nd.Result) error {
	for _, r := range done {
		o := q.sole
		if o == nil {
			var ok bool
			if o, ok = q.owners[r]; !ok {
				return datapath.ErrUnexpected
			}
		}
		if err := o.complete(r); err != nil {
			if q.many {
				return fmt.Errorf("connection %d: %w", o.index(), err)
			}
			return err
		}
	}
	return nil
}

// take waits for completions with the poller (polling, or Notify with -b)
// and dispatches them.
func (q *perfCQ) take() error {
	done, err := q.poller.Next()
	if err != nil {
		return err
	}
	return q.dispatch(done)
}

// wait is take blocking in Notify whatever -b says.
func (q *perfCQ) wait() error {
	done, err := q.waiter.Next()
	if err != nil {
		return err
	}
	return q.dispatch(done)
}

// poll dispatches the completions there are now, if any.
func (q *perfCQ) poll() error { return q.dispatch(q.poller.Poll()) }

// close closes the completion queue, after the sessions attached to it.
func (q *perfCQ) close() { q.cq.Close() }
