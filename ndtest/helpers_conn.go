package ndtest

// Helpers for the adapter, connection, CQ and teardown cases: blocking calls
// run in goroutines that can be observed while they block, status checks,
// and small connection and data-path steps.

import (
	"bytes"
	"context"
	"errors"
	"net/netip"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/godirect/nd"
)

// call is one blocking nd call running in its own goroutine.
type call struct {
	name string
	gid  uint64
	done chan struct{}
	err  error // valid once done is closed
}

// start runs fn in a new goroutine. fn must end by itself (every blocking
// call in it uses a context that ends), so the goroutine never leaks.
func start(name string, fn func() error) *call {
	c := &call{name: name, done: make(chan struct{})}
	id := make(chan uint64, 1)
	go func() {
		defer close(c.done)
		id <- goroutineID()
		c.err = fn()
	}()
	c.gid = <-id
	return c
}

// wait waits for the call to return and returns its error.
func (c *call) wait(t testing.TB) error {
	t.Helper()
	select {
	case <-c.done:
		return c.err
	case <-time.After(Timeout + 5*time.Second):
		t.Fatalf("%s did not return within %v", c.name, Timeout+5*time.Second)
		return nil
	}
}

// returned reports, without blocking, whether the call has returned.
func (c *call) returned() (error, bool) {
	select {
	case <-c.done:
		return c.err, true
	default:
		return nil, false
	}
}

// notReturned fails the test if the call has returned, or returns now: it
// first waits until the call's goroutine has either returned or is parked
// (again), so that a wake-up the provider already made is not missed
// because the woken goroutine has not run yet.
func (c *call) notReturned(t testing.TB, why string) {
	t.Helper()
	if !c.settle() {
		t.Fatalf("%s neither returned nor blocked within %v", c.name, Timeout)
	}
	if err, ok := c.returned(); ok {
		t.Fatalf("%s returned %v; want it still blocked (%s)", c.name, err, why)
	}
}

// settle waits until the call has returned or its goroutine is parked. It
// reports false on timeout.
func (c *call) settle() bool {
	deadline := time.Now().Add(Timeout)
	buf := make([]byte, 1<<16)
	for {
		if _, ok := c.returned(); ok {
			return true
		}
		n := runtime.Stack(buf, true)
		if n == len(buf) {
			buf = make([]byte, 2*len(buf))
			continue
		}
		// Checked again after the dump: the goroutine may have ended
		// between the two looks.
		if _, ok := c.returned(); ok || goroutineParked(buf[:n], c.gid) {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		runtime.Gosched()
	}
}

// parked waits until the call's goroutine is blocked inside the provider
// (parked on a channel, select, condition or network wait), so that an
// event caused afterwards is known to find the call waiting. It fails the
// test if the call returns instead.
func (c *call) parked(t testing.TB) {
	t.Helper()
	ok := c.settle()
	if err, done := c.returned(); done {
		t.Fatalf("%s returned %v; want it to block", c.name, err)
	}
	if !ok {
		t.Fatalf("%s did not block within %v", c.name, Timeout)
	}
}

// goroutineParked reports whether goroutine id is parked in a waiting state
// in the stack dump.
func goroutineParked(dump []byte, id uint64) bool {
	prefix := []byte("goroutine " + strconv.FormatUint(id, 10) + " [")
	i := bytes.Index(dump, prefix)
	if i < 0 {
		return false
	}
	rest := dump[i+len(prefix):]
	j := bytes.IndexByte(rest, ']')
	if j < 0 {
		return false
	}
	state, _, _ := strings.Cut(string(rest[:j]), ",")
	switch state {
	case "select", "select (no cases)", "chan receive", "chan send", "chan receive (nil chan)",
		"chan send (nil chan)", "sync.Cond.Wait", "sync.WaitGroup.Wait", "semacquire", "IO wait":
		return true
	}
	return false
}

func goroutineID() uint64 {
	var b [64]byte
	s := string(b[:runtime.Stack(b[:], false)])
	s = strings.TrimPrefix(s, "goroutine ")
	s, _, _ = strings.Cut(s, " ")
	id, _ := strconv.ParseUint(s, 10, 64)
	return id
}

// expectStatus fails the test unless err carries exactly the status want
// (nil for Success).
func expectStatus(t testing.TB, op string, err error, want nd.Status) {
	t.Helper()
	if got := nd.StatusOf(err); got != want || (want == nd.Success && err != nil) {
		t.Fatalf("%s = %v; want %v", op, err, want)
	}
}

// expectCanceled fails the test unless errors.Is(err, nd.ErrCanceled).
func expectCanceled(t testing.TB, op string, err error) {
	t.Helper()
	if !errors.Is(err, nd.ErrCanceled) {
		t.Fatalf("%s = %v; want an error that is nd.ErrCanceled", op, err)
	}
}

// listen listens on a with the suite's protocol and an assigned port.
func listen(t testing.TB, a nd.Adapter, backlog int) nd.Listener {
	t.Helper()
	l, err := a.Listen(backlog, Protocol, 0)
	if err != nil {
		t.Fatalf("Listen(%d, %d, 0): %v", backlog, Protocol, err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

// addrOf is the address a Connect to listener l of adapter a names.
func addrOf(a nd.Adapter, l nd.Listener) netip.AddrPort {
	return netip.AddrPortFrom(a.Address(), l.Port())
}

// side makes an unconnected Side on a with DefaultLimits and 64-entry queues.
func side(t testing.TB, a nd.Adapter) *Side {
	t.Helper()
	return NewSide(t, a, DefaultLimits, 64, false)
}

// passiveSide is a Side with only a connector, to hand to
// GetConnectionRequest; addEndpoint completes it.
func passiveSide(t testing.TB, a nd.Adapter) *Side {
	t.Helper()
	return &Side{Adapter: a, Connector: mustConnector(t, a)}
}

// addEndpoint creates the queues and the endpoint of a passive Side.
func addEndpoint(t testing.TB, s *Side, limits nd.EndpointLimits) {
	t.Helper()
	s.InCQ = mustCQ(t, s.Adapter, 64)
	s.OutCQ = mustCQ(t, s.Adapter, 64)
	ep, err := s.Connector.CreateEndpoint(s.InCQ, s.OutCQ, limits)
	if err != nil {
		t.Fatalf("passive CreateEndpoint(%+v): %v", limits, err)
	}
	t.Cleanup(func() { ep.Close() })
	s.Endpoint = ep
	s.Inline = ep.MaxInlineData()
}

// startConnect starts active's Connect to remote with private data pd.
func startConnect(t testing.TB, active *Side, remote netip.AddrPort, pd []byte) *call {
	c := ctx(t)
	return start("Connect", func() error {
		return active.Connector.Connect(c, active.Endpoint, remote, Protocol, 0, pd)
	})
}

// startGetRequest starts l.GetConnectionRequest for s's connector.
func startGetRequest(t testing.TB, l nd.Listener, s *Side) *call {
	c := ctx(t)
	return start("GetConnectionRequest", func() error { return l.GetConnectionRequest(c, s.Connector) })
}

// startAccept starts s's Accept with private data pd.
func startAccept(t testing.TB, s *Side, pd []byte) *call {
	c := ctx(t)
	return start("Accept", func() error { return s.Connector.Accept(c, s.Endpoint, pd) })
}

// connectTo connects the unconnected Side active to listener l of adapter b
// and returns the passive Side. prePost, if not nil, runs on the passive
// side after its endpoint exists and before Accept.
func connectTo(t testing.TB, active *Side, b nd.Adapter, l nd.Listener, prePost func(*Side)) *Side {
	t.Helper()
	passive := passiveSide(t, b)
	req := startGetRequest(t, l, passive)
	conn := startConnect(t, active, addrOf(b, l), nil)
	expectStatus(t, "GetConnectionRequest", req.wait(t), nd.Success)
	addEndpoint(t, passive, DefaultLimits)
	if prePost != nil {
		prePost(passive)
	}
	acc := startAccept(t, passive, nil)
	expectStatus(t, "Connect", conn.wait(t), nd.Success)
	expectStatus(t, "CompleteConnect", active.Connector.CompleteConnect(ctx(t)), nd.Success)
	expectStatus(t, "Accept", acc.wait(t), nd.Success)
	return passive
}

// buffer is a registered buffer of one side.
type buffer struct {
	b  []byte
	mr nd.MemoryRegion
}

func newBuffer(t testing.TB, s *Side, n int) buffer {
	t.Helper()
	b := make([]byte, n)
	return buffer{b: b, mr: s.Register(t, b)}
}

func (b buffer) sgl() []nd.SGE { return []nd.SGE{{Buffer: b.b, Region: b.mr}} }

// recvBuf posts a Receive of the whole buffer.
func recvBuf(t testing.TB, s *Side, b buffer, res *nd.Result) {
	t.Helper()
	if err := s.Endpoint.Receive(res, b.sgl()); err != nil {
		t.Fatalf("Receive: %v", err)
	}
}

// sendBuf posts a Send of the whole buffer.
func sendBuf(t testing.TB, s *Side, b buffer, res *nd.Result, flags nd.Flags) {
	t.Helper()
	if err := s.Endpoint.Send(res, b.sgl(), flags); err != nil {
		t.Fatalf("Send: %v", err)
	}
}

// pollFor polls cq with GetResults only (never Notify, which would disturb
// the Notify calls a test is observing) until it returns one Result.
func pollFor(t testing.TB, cq nd.CompletionQueue) *nd.Result {
	t.Helper()
	var out [1]*nd.Result
	deadline := time.Now().Add(Timeout)
	for cq.GetResults(out[:]) == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("no completion within %v", Timeout)
		}
		runtime.Gosched()
	}
	return out[0]
}

// wantResult checks that got is want with status and, if n >= 0, n bytes.
func wantResult(t testing.TB, got, want *nd.Result, status nd.Status, n int) {
	t.Helper()
	if got != want {
		t.Fatalf("completion is Result %p; want %p", got, want)
	}
	if got.Status != status {
		t.Fatalf("completion status = %v; want %v", got.Status, status)
	}
	if n >= 0 && got.BytesTransferred != n {
		t.Fatalf("BytesTransferred = %d; want %d", got.BytesTransferred, n)
	}
}

// cancelableCtx returns a context that ends only when canceled (at the
// latest when the test ends), so a call that ignores the cancellation is
// caught by call.wait's deadline instead of being ended by a timeout.
func cancelableCtx(t testing.TB) (context.Context, context.CancelFunc) {
	c, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	return c, cancel
}
