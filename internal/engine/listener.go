package engine

import (
	"context"
	"sync"

	"github.com/godirect/nd"
	"github.com/godirect/nd/internal/ndrules"
)

// Listener hands incoming connection requests to connectors
// (nd.Listener). Its methods are safe for concurrent use.
type Listener struct {
	a        *Adapter
	backlog  int
	protocol int
	port     uint16

	mu      sync.Mutex
	closed  bool
	pending []*attempt           // requests nobody took yet, oldest first
	waiters []*connectionRequest // GetConnectionRequest calls, oldest first
}

type connectionRequest struct {
	c    *Connector
	done chan bool // true: a request was bound to c; false: the listener closed
}

var _ nd.Listener = (*Listener)(nil)

func newListener(a *Adapter, backlog, protocol int) *Listener {
	return &Listener{a: a, backlog: backlog, protocol: protocol}
}

// Port implements nd.Listener.
func (l *Listener) Port() uint16 { return l.port }

// Protocol is the ND protocol number the listener serves.
func (l *Listener) Protocol() int { return l.protocol }

// Deliver hands an incoming request, carried by link (the passive end), to
// the listener. It returns the events sink the transport must report the
// link's events to, or ErrConnectionRefused when the listener is closed or
// its backlog is full.
func (l *Listener) Deliver(req ConnRequest, link Link) (LinkEvents, error) {
	t := &attempt{req: req, link: link}
	t.req.PrivateData = append([]byte(nil), req.PrivateData...)
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil, nd.ErrConnectionRefused
	}
	for len(l.waiters) > 0 {
		w := l.waiters[0]
		l.waiters = l.waiters[1:]
		if bind(t, w.c) {
			w.done <- true
			return t, nil
		}
		w.done <- false // its connector closed
	}
	if l.backlog > 0 && len(l.pending) >= l.backlog {
		return nil, nd.ErrConnectionRefused
	}
	l.pending = append(l.pending, t)
	return t, nil
}

// bind gives attempt t to connector c; it reports false if c is closed.
func bind(t *attempt, c *Connector) bool {
	c.mu.Lock()
	c.waitingOn = nil
	if c.closed {
		c.mu.Unlock()
		return false
	}
	c.cur, c.state, c.link, c.rejected = t, ndrules.Requested, t.link, false
	c.havePeer = true
	c.peerIRD, c.peerORD, c.peerData = t.req.IRD, t.req.ORD, t.req.PrivateData
	c.local, c.remote = t.req.Local, t.req.Remote
	c.signalLocked()
	c.mu.Unlock()
	t.mu.Lock()
	t.c = c
	aborted := t.aborted
	t.mu.Unlock()
	if aborted {
		c.fail(t, ndrules.Aborted)
	}
	return true
}

// connectorClosed is the reason GetConnectionRequest refuses a closed
// connector.
const connectorClosed = "the connector is closed"

// GetConnectionRequest implements nd.Listener.
func (l *Listener) GetConnectionRequest(ctx context.Context, conn nd.Connector) error {
	return l.QueueConnectionRequest(conn)(ctx)
}

// QueueConnectionRequest is GetConnectionRequest in two halves, for a
// caller whose calls must keep their order while their waits run on other
// goroutines (the ND provider DLL): at once, it binds conn to the oldest
// pending request or queues conn behind the calls made before it; the
// function it returns reports the outcome, waiting for a request until ctx
// ends (which withdraws conn from the queue). That function must be called
// exactly once. Safe for concurrent use.
func (l *Listener) QueueConnectionRequest(conn nd.Connector) (wait func(ctx context.Context) error) {
	w, err := l.queueConnectionRequest(conn)
	if w == nil {
		return func(context.Context) error { return err }
	}
	return func(ctx context.Context) error { return l.awaitConnectionRequest(ctx, w) }
}

// queueConnectionRequest binds conn to a pending request (nil, nil),
// queues it (its waiter, nil), or refuses it (nil, the error).
func (l *Listener) queueConnectionRequest(conn nd.Connector) (*connectionRequest, error) {
	l.mu.Lock()
	st := l.a.closedStatus(l.closed)
	l.mu.Unlock()
	if st != nd.Success {
		return nil, st
	}
	c, ok := conn.(*Connector)
	if !ok || c == nil || c.a != l.a {
		return nil, ndrules.Arg("GetConnectionRequest", "c", nd.ErrInvalidParameter1, "not a connector of this adapter")
	}
	c.mu.Lock()
	closed := c.closed
	busy := c.state != ndrules.Idle || c.cur != nil || c.waitingOn != nil
	c.mu.Unlock()
	switch {
	case closed:
		return nil, ndrules.Arg("GetConnectionRequest", "c", nd.ErrInvalidParameter1, connectorClosed)
	case busy:
		return nil, nd.ErrInvalidDeviceState
	}
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil, l.a.closedStatus(true)
	}
	for len(l.pending) > 0 {
		t := l.pending[0]
		t.mu.Lock()
		aborted := t.aborted
		t.mu.Unlock()
		if aborted {
			l.pending = l.pending[1:]
			continue
		}
		if !bind(t, c) {
			l.mu.Unlock()
			return nil, ndrules.Arg("GetConnectionRequest", "c", nd.ErrInvalidParameter1, connectorClosed) // c closed meanwhile; t stays pending
		}
		l.pending = l.pending[1:]
		l.mu.Unlock()
		return nil, nil
	}
	w := &connectionRequest{c: c, done: make(chan bool, 1)}
	l.waiters = append(l.waiters, w)
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		l.waiters = l.waiters[:len(l.waiters)-1]
		l.mu.Unlock()
		return nil, &nd.OpError{Op: "GetConnectionRequest", Status: nd.ErrCanceled}
	}
	c.waitingOn = l
	c.mu.Unlock()
	l.mu.Unlock()
	return w, nil
}

// awaitConnectionRequest waits for the request bound to w's connector.
func (l *Listener) awaitConnectionRequest(ctx context.Context, w *connectionRequest) error {
	c := w.c
	select {
	case ok := <-w.done:
		if !ok {
			return &nd.OpError{Op: "GetConnectionRequest", Status: nd.ErrCanceled}
		}
		return nil
	case <-ctx.Done():
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for i, x := range l.waiters {
		if x == w {
			l.waiters = append(l.waiters[:i], l.waiters[i+1:]...)
			c.mu.Lock()
			if c.waitingOn == l {
				c.waitingOn = nil
			}
			c.mu.Unlock()
			return canceled("GetConnectionRequest", ctx.Err())
		}
	}
	// A request was bound just as ctx ended: it is ours.
	if <-w.done {
		return nil
	}
	return canceled("GetConnectionRequest", ctx.Err())
}

// cancelWait ends the GetConnectionRequest that waits to bind a request to
// c (c closed): it returns ErrCanceled.
func (l *Listener) cancelWait(c *Connector) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for i, w := range l.waiters {
		if w.c == c {
			l.waiters = append(l.waiters[:i], l.waiters[i+1:]...)
			w.done <- false
			return
		}
	}
}

// Close implements nd.Listener.
func (l *Listener) Close() error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil
	}
	l.closed = true
	waiters, pending := l.waiters, l.pending
	l.waiters, l.pending = nil, nil
	l.mu.Unlock()
	for _, w := range waiters {
		w.c.mu.Lock()
		if w.c.waitingOn == l {
			w.c.waitingOn = nil
		}
		w.c.mu.Unlock()
		w.done <- false
	}
	for _, t := range pending {
		t.link.Reject(nil)
		t.link.Close(nd.ErrConnectionRefused)
	}
	l.a.transport.Unlisten(l)
	l.a.forgetListener(l)
	return nil
}
