package remote

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/godirect/nd"
)

// ErrClosed is the cause carried by the errors of calls made after the
// client closed or its connection to the child failed; their status is
// nd.ErrDeviceRemoved, as for an adapter that went away.
var ErrClosed = errors.New("remote: the connection to the child is closed")

// Client is the parent's end of a connection to a child running Serve. Its
// adapters (OpenAdapter) are proxies: every call is forwarded to the child
// and runs there on the child provider's real objects; the memory the
// caller registers is kept in step with the child's copy (see Split for the
// exact rule). A Client and everything it returns are safe for concurrent
// use, as the nd contracts require.
type Client struct {
	conn   io.ReadWriteCloser
	out    *outQueue
	nextID atomic.Uint64

	mu      sync.Mutex
	pending map[uint64]*call
	broken  error
	results map[uint64]*nd.Result // posted on proxied endpoints, not yet reaped

	// syncMu serialises memory exchanges with the child: at most one
	// request carrying memory is in flight, so pushes and pulls never
	// cross. It guards the fields below and every rRegion's and rWindow's
	// sync state.
	syncMu  sync.Mutex
	regions map[uint64]*rRegion // registered on a proxied adapter still open
	active  map[uint64]*rRegion // the regions synced at every call
	windows map[uint64]*rWindow // windows with an invalidate Result

	readerDone chan struct{}
	closeOnce  sync.Once
	closeErr   error
}

// NewClient starts a client on conn, whose other end runs Serve. The client
// owns conn: Close closes it.
func NewClient(conn io.ReadWriteCloser) *Client {
	c := &Client{
		conn:       conn,
		out:        newOutQueue(conn),
		pending:    make(map[uint64]*call),
		results:    make(map[uint64]*nd.Result),
		regions:    make(map[uint64]*rRegion),
		active:     make(map[uint64]*rRegion),
		windows:    make(map[uint64]*rWindow),
		readerDone: make(chan struct{}),
	}
	go c.read()
	return c
}

// OpenAdapter opens, in the child, the adapter of the child's provider that
// serves addr, and returns its proxy. Errors are the child provider's.
func (c *Client) OpenAdapter(addr netip.Addr) (nd.Adapter, error) {
	b, _ := addr.MarshalBinary()
	id := c.newID()
	f := &frame{op: opOpenAdapter, ints: []int64{int64(id)}, blobs: [][]byte{b}}
	if _, err := c.merged(noCancel, f, nil, nil); err != nil {
		return nil, err
	}
	return &rAdapter{c: c, id: id, addr: addr}, nil
}

// Close ends the session: the child closes every adapter still open, ends
// its calls and returns from Serve; then the connection is closed. Calls
// made afterwards fail with nd.ErrDeviceRemoved (cause ErrClosed). Close
// waits for the client's goroutines to end; it is idempotent.
func (c *Client) Close() error {
	c.closeOnce.Do(func() {
		c.out.put((&frame{kind: kindBye}).encode())
		// The child answers bye when it has cleaned up; the bound only
		// matters if it hangs.
		select {
		case <-c.readerDone:
		case <-time.After(30 * time.Second):
		}
		c.out.close()
		c.closeErr = c.conn.Close()
		<-c.readerDone
		c.fail(ErrClosed)
	})
	return c.closeErr
}

func (c *Client) newID() uint64 { return c.nextID.Add(1) }

// noCancel is the context of the calls whose nd method takes none: they
// are not overlapped in ND (Query, the Create calls, posting, Close...), so
// nothing cancels them in the child and a deadline would bound nothing.
// Such a call waits for the child's answer, which carries the memory
// changes the call made; the wait ends when the child answers or the
// session breaks (Close, or a failed connection).
var noCancel = context.Background()

// call is one request waiting for the child.
//
// The caller first waits on gate, a locked mutex that the reader unlocks
// when the child acknowledges that a blocking call is parked inside its
// provider, or when the response arrives; only then does it wait on resp.
// A goroutine waiting on a mutex is not "parked" to an observer that reads
// goroutine states (ndtest's check that a call blocks), so such an observer
// sees a proxied call block exactly when the real call blocks in the child.
type call struct {
	gate   sync.Mutex
	opened atomic.Bool
	resp   chan *frame
}

func (cl *call) open() {
	if cl.opened.CompareAndSwap(false, true) {
		cl.gate.Unlock()
	}
}

// roundTrip sends request f and returns the child's response. When ctx ends
// first, the child is told to cancel the call, and roundTrip still waits for
// its response (which then normally carries ErrCanceled).
func (c *Client) roundTrip(ctx context.Context, f *frame) *frame {
	f.kind = kindRequest
	f.id = c.newID()
	cl := &call{resp: make(chan *frame, 1)}
	cl.gate.Lock()
	c.mu.Lock()
	if c.broken != nil {
		err := c.broken
		c.mu.Unlock()
		return brokenFrame(err)
	}
	c.pending[f.id] = cl
	c.mu.Unlock()
	if ctx != nil {
		if dl, ok := ctx.Deadline(); ok {
			f.deadline = dl.UnixNano()
		}
	}
	c.out.put(f.encode())
	var stop func() bool
	if ctx != nil && ctx.Done() != nil {
		id := f.id
		stop = context.AfterFunc(ctx, func() {
			c.out.put((&frame{kind: kindCancel, id: id}).encode())
		})
	}
	cl.gate.Lock() // see call: not a parked wait
	r := <-cl.resp
	if stop != nil {
		stop()
	}
	return r
}

func brokenFrame(err error) *frame {
	return &frame{kind: kindResponse, err: wireErr{kind: errOp, status: uint32(nd.ErrDeviceRemoved), op: "remote", msg: err.Error()}}
}

// read dispatches the child's frames until the connection ends.
func (c *Client) read() {
	defer close(c.readerDone)
	br := bufio.NewReaderSize(c.conn, 64<<10)
	for {
		f, err := readFrame(br)
		if err != nil {
			c.fail(ErrClosed)
			return
		}
		switch f.kind {
		case kindAck:
			c.mu.Lock()
			cl := c.pending[f.id]
			c.mu.Unlock()
			if cl != nil {
				cl.open()
			}
		case kindResponse:
			c.mu.Lock()
			cl := c.pending[f.id]
			delete(c.pending, f.id)
			c.mu.Unlock()
			if cl != nil {
				cl.resp <- f
				cl.open()
			}
		case kindBye:
			c.fail(ErrClosed)
			return
		}
	}
}

// fail ends every pending call with err and makes later calls fail.
func (c *Client) fail(err error) {
	c.mu.Lock()
	if c.broken == nil {
		c.broken = err
	}
	pending := c.pending
	c.pending = make(map[uint64]*call)
	c.mu.Unlock()
	for _, cl := range pending {
		cl.resp <- brokenFrame(err)
		cl.open()
	}
}

// merged runs a call that does not block for long: the parent's memory
// changes travel with the request and the child's with the response, under
// syncMu. named are proxied regions the call uses (SGEs, Bind): they are
// pushed even if not yet synced, and synced from now on if the call
// succeeds. hook, if not nil, runs under syncMu after the response.
func (c *Client) merged(ctx context.Context, f *frame, named []*rRegion, hook func(r *frame, err error)) (*frame, error) {
	c.syncMu.Lock()
	defer c.syncMu.Unlock()
	f.sync = c.pushLocked(named)
	r := c.roundTrip(ctx, f)
	err := decodeErr(ctx, r.err)
	if err == nil {
		for _, id := range f.sync.activate {
			if rg := c.regions[id]; rg != nil {
				if rg.shadow == nil {
					rg.shadow = make([]byte, len(rg.buf))
				}
				c.active[id] = rg
			}
		}
	}
	if hook != nil {
		hook(r, err)
	}
	c.applyPullLocked(r.sync)
	return r, err
}

// blocking runs a call that may block in the child (with a context, or a
// Close): memory is exchanged before and after it, and syncMu is not held
// while it runs.
func (c *Client) blocking(ctx context.Context, f *frame) (*frame, error) {
	c.sync()
	r := c.roundTrip(ctx, f)
	err := decodeErr(ctx, r.err)
	c.sync()
	return r, err
}

// sync exchanges memory with the child, if any is synced.
func (c *Client) sync() {
	c.syncMu.Lock()
	defer c.syncMu.Unlock()
	if len(c.active) == 0 && len(c.windows) == 0 {
		return
	}
	f := &frame{op: opSync, sync: c.pushLocked(nil)}
	r := c.roundTrip(noCancel, f)
	c.applyPullLocked(r.sync)
}

// around runs fn, a call on a local object of a split provider, between two
// memory exchanges.
func (c *Client) around(fn func()) {
	c.sync()
	fn()
	c.sync()
}

// pushLocked collects the parent's changes: those of the synced regions,
// and those of named regions not yet synced (to be synced if the call
// succeeds).
func (c *Client) pushLocked(named []*rRegion) *syncSection {
	s := &syncSection{}
	for _, r := range c.active {
		s.chunks = r.pushLocked(s.chunks)
	}
	for i, r := range named {
		if c.active[r.id] != nil || c.regions[r.id] != r || dup(named[:i], r) {
			continue
		}
		s.chunks = r.pushLocked(s.chunks)
		s.activate = append(s.activate, r.id)
	}
	for id, w := range c.windows {
		st, n := readResultNoRace(w.res)
		if st != w.status || n != w.bytes {
			w.status, w.bytes = st, n
			s.windows = append(s.windows, winState{id: id, status: uint32(st), bytes: int64(n)})
		}
	}
	return s
}

func dup(rs []*rRegion, r *rRegion) bool {
	for _, x := range rs {
		if x == r {
			return true
		}
	}
	return false
}

// applyPullLocked applies the child's changes.
func (c *Client) applyPullLocked(s *syncSection) {
	if s == nil {
		return
	}
	for _, ch := range s.chunks {
		if r := c.regions[ch.region]; r != nil && r.shadow != nil {
			applyChunk(ch, r.buf, r.shadow)
		}
	}
	for _, ws := range s.windows {
		if w := c.windows[ws.id]; w != nil {
			w.status, w.bytes = nd.Status(ws.status), int(ws.bytes)
			writeResultNoRace(w.res, w.status, w.bytes)
		}
	}
}

// dropAdapterLocked forgets the memory of a proxied adapter that closed.
func (c *Client) dropAdapterLocked(a *rAdapter) {
	for id, r := range c.regions {
		if r.a == a {
			delete(c.regions, id)
			delete(c.active, id)
		}
	}
	for id, w := range c.windows {
		if w.a == a {
			delete(c.windows, id)
		}
	}
}

// addResult records res, posted as request id, so that GetResults can hand
// the caller's own pointer back. A nil res is id 0.
func (c *Client) addResult(res *nd.Result) uint64 {
	if res == nil {
		return 0
	}
	id := c.newID()
	c.mu.Lock()
	c.results[id] = res
	c.mu.Unlock()
	return id
}

func (c *Client) dropResult(id uint64) {
	if id == 0 {
		return
	}
	c.mu.Lock()
	delete(c.results, id)
	c.mu.Unlock()
}

func (c *Client) takeResult(id uint64) *nd.Result {
	c.mu.Lock()
	defer c.mu.Unlock()
	r := c.results[id]
	delete(c.results, id)
	return r
}
