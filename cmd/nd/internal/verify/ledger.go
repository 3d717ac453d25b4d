package verify

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/godirect/nd"
)

// op is what a request is.
type op uint8

const (
	opSend    op = iota // a verified Send
	opReceive           // a Receive (data or control)
	opWrite             // a verified RDMA Write
	opRead              // a verified RDMA Read
	opControl           // a Send of a control message
	opBind              // a window's Bind
	nOps
)

var opNames = [nOps]string{"Send", "Receive", "Write", "Read", "control Send", "Bind"}

func (o op) String() string { return opNames[o] }

// request is one request of a side: its Result, what it is, and whether it
// is outstanding (posted, not completed).
type request struct {
	res    nd.Result
	op     op
	slot   int    // its buffer slot
	seq    uint64 // the message's number (data requests)
	size   int
	posted bool
}

// ledger accounts for every request of one connection: each one posted
// must complete exactly once. One goroutine uses it.
type ledger struct {
	byResult    map[*nd.Result]*request
	outstanding int
	posted      [nOps]int
	completed   [nOps]int
	statuses    map[string]int // "op status" -> completions
	// The first completion with an error: when, what and which.
	failedAt time.Time
	failure  nd.Status
	failedOp op
	// telling is the status that says most of why the connection ended:
	// the first one other than ND_CANCELED, else ND_CANCELED.
	telling nd.Status
	bad     error // a completion of no outstanding request
}

func newLedger() *ledger {
	return &ledger{byResult: make(map[*nd.Result]*request), statuses: make(map[string]int)}
}

// restart forgets the failure of a connection attempt that did not come
// up (its flushed requests), keeping the counts.
func (l *ledger) restart() {
	l.failedAt, l.failure, l.failedOp, l.telling = time.Time{}, nd.Success, 0, nd.Success
}

// add makes r known to the ledger (once, before its first post).
func (l *ledger) add(r *request) { l.byResult[&r.res] = r }

// post records that r was posted; call it after the post succeeded.
func (l *ledger) post(r *request) {
	r.posted = true
	l.outstanding++
	l.posted[r.op]++
}

// complete takes a completion and returns its request, or an error for a
// completion of a request that is not outstanding.
func (l *ledger) complete(res *nd.Result) (*request, error) {
	r := l.byResult[res]
	if r == nil || !r.posted {
		err := errors.New("a completion of a request that was not outstanding (a second completion, or a Result never posted)")
		if r != nil {
			err = fmt.Errorf("a second completion of a %s (status %v)", r.op, res.Status)
		}
		if l.bad == nil {
			l.bad = err
		}
		return nil, err
	}
	r.posted = false
	l.outstanding--
	l.completed[r.op]++
	l.statuses[r.op.String()+" "+res.Status.Name()]++
	if res.Status != nd.Success {
		if l.failedAt.IsZero() {
			l.failedAt, l.failure, l.failedOp = time.Now(), res.Status, r.op
		}
		if l.telling == nd.Success || l.telling == nd.ErrCanceled {
			l.telling = res.Status
		}
	}
	return r, nil
}

// summary lists the completions by request kind and status, e.g.
// "Receive ND_CANCELED 9, Send ND_IO_TIMEOUT 2".
func (l *ledger) summary() string {
	keys := make([]string, 0, len(l.statuses))
	for k := range l.statuses {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for i, k := range keys {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s %d", k, l.statuses[k])
	}
	return b.String()
}

// totals is "N posted, N completed".
func (l *ledger) totals() (posted, completed int) {
	for i := range nOps {
		posted += l.posted[i]
		completed += l.completed[i]
	}
	return posted, completed
}

// reaper takes a side's completions into its ledger.
type reaper struct {
	cq      nd.CompletionQueue
	ledger  *ledger
	results []*nd.Result
	// handle, if not nil, sees each completion of a known request.
	handle func(r *request) error
	// wake, if not nil, ends a wait in Notify once, when the connection
	// ended, so that the condition is looked at again.
	wake context.Context
}

// reapUntil takes completions until done reports true, waiting in Notify
// while none come; an error of handle or of the ledger ends it.
func (rp *reaper) reapUntil(ctx context.Context, done func() bool) error {
	for !done() {
		n := rp.cq.GetResults(rp.results)
		if n == 0 {
			nctx := ctx
			if rp.wake != nil {
				nctx = rp.wake
			}
			if err := rp.cq.Notify(nctx, nd.NotifyAny); err != nil {
				if ctx.Err() != nil {
					return fmt.Errorf("waiting for completions: %w", ctx.Err())
				}
				if nctx != ctx {
					rp.wake = nil
					continue
				}
				return fmt.Errorf("CompletionQueue.Notify: %w", err)
			}
			continue
		}
		for _, res := range rp.results[:n] {
			r, err := rp.ledger.complete(res)
			if err != nil {
				return err
			}
			if rp.handle != nil {
				if err := rp.handle(r); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// drain waits, at most d, until every outstanding request completed, and
// then that no completion more comes within settle (a second one of a
// request, which reapUntil reports).
func (rp *reaper) drain(ctx context.Context, d, settle time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	handle, wake := rp.handle, rp.wake
	rp.handle, rp.wake = nil, nil
	defer func() { rp.handle, rp.wake = handle, wake }()
	if err := rp.reapUntil(ctx, func() bool { return rp.ledger.outstanding == 0 }); err != nil {
		return fmt.Errorf("%w (%d requests still outstanding)", err, rp.ledger.outstanding)
	}
	sctx, scancel := context.WithTimeout(ctx, settle)
	defer scancel()
	if n := rp.cq.GetResults(rp.results); n > 0 {
		_, err := rp.ledger.complete(rp.results[0])
		return err
	}
	if rp.cq.Notify(sctx, nd.NotifyAny) == nil {
		if n := rp.cq.GetResults(rp.results); n > 0 {
			_, err := rp.ledger.complete(rp.results[0])
			return err
		}
	}
	return rp.ledger.bad
}
