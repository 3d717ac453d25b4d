package ndtest

// Closing objects (docs/semantics.md, "Closing objects"): what closing each
// object does to the requests in flight and what every later call returns,
// for each object alone and for each pair closed in each order.

import (
	"context"
	"net/netip"
	"slices"
	"sync"
	"testing"

	"github.com/godirect/nd"
)

// lifecycleCases check closing objects: each object alone, the shared
// queue, each pair of objects closed in each order with requests in flight,
// a connector's second endpoint, inline data whose sink closes, and a
// property test of random programs.
var lifecycleCases = slices.Concat(afterCloseCases(), []testCase{
	{"AfterClose/SharedCQ", `docs/semantics.md "call after a close": after the Close of a queue serving both directions every later call returns the status named there`, lifecycleAfterCloseSharedCQ},
}, inFlightCases(), []testCase{
	{"CreateEndpointAgain", `docs/semantics.md "one endpoint per connector": a second endpoint fails ND_NOT_SUPPORTED while the first is open; once it closed (later calls ND_INVALID_HANDLE) the connector takes a new one`, testCreateEndpointAgain},
	{"InlineSink/Receive", `docs/semantics.md "bad local SGE": a Receive into an SGE without a region (inline) is accepted and completes ND_ACCESS_VIOLATION`, lifecycleInlineSinkReceive},
	{"InlineSink/Read", `docs/semantics.md "bad local SGE": a Read into an SGE without a region (inline) is accepted and completes ND_ACCESS_VIOLATION`, lifecycleInlineSinkRead},
	{"ConcurrentClose", `docs/semantics.md "concurrent Close": a call made after a Close returned is refused, also when another Close of the same object is still closing what depends on it`, testConcurrentClose},
	{"Property", `docs/semantics.md "posts and closes at random": random programs of posts and Closes keep every rule of closing (each request completes once, no hang)`, runLifecycleProperty},
})

// afterCloseCases are one case per object of the active side: after its
// Close, every later call of either side returns what docs/semantics.md
// says and the pre-posted Receives are canceled.
func afterCloseCases() []testCase {
	var cases []testCase
	for _, o := range []lcObject{objAdapter, objInCQ, objOutCQ, objConnector, objEndpoint} {
		cases = append(cases, testCase{"AfterClose/" + o.String(), `docs/semantics.md "call after a close": after one object's Close every later call of either side returns the status named there, and pre-posted Receives complete ND_CANCELED`, func(t *testing.T, p nd.Provider) {
			w := mustWorld(t, p, false)
			w.close(w.active, o)
			w.laterCalls(w.active)
			w.awaitEnd(w.passive)
			w.laterCalls(w.passive)
			w.closeEverything(nil)
			w.drain()
			w.report(t, "after "+o.String()+".Close")
			w.expectPrePostedCanceled(t)
		}})
	}
	return cases
}

// closing is an object of one side that an InFlight case closes.
type closing struct {
	passive bool
	o       lcObject
}

func (c closing) String() string {
	if c.passive {
		return "Passive" + c.o.String()
	}
	return c.o.String()
}

// inFlightCases are one case per ordered pair of objects (of the active
// side, or the passive side's adapter, connector, endpoint and listener):
// both are closed, in that order, while a Send, a Read and a Write of the
// active side and a Read of the passive side are in flight.
func inFlightCases() []testCase {
	var objs []closing
	for _, o := range []lcObject{objAdapter, objInCQ, objOutCQ, objConnector, objEndpoint, objRegion, objWindow} {
		objs = append(objs, closing{false, o})
	}
	for _, o := range []lcObject{objAdapter, objConnector, objEndpoint, objListener} {
		objs = append(objs, closing{true, o})
	}
	var cases []testCase
	for i, first := range objs {
		for j, second := range objs {
			if i == j {
				continue
			}
			cases = append(cases, testCase{"InFlight/" + first.String() + "Then" + second.String(), `docs/semantics.md "two closes with requests in flight": any two objects closed in either order with requests in flight complete every request once, with the status named there`, func(t *testing.T, p nd.Provider) {
				w := mustWorld(t, p, false)
				// In flight: the pre-posted Receives, and whatever of these
				// has not completed yet.
				w.post(w.active, opSend)
				w.post(w.active, opRead)
				w.post(w.active, opWrite)
				w.post(w.passive, opRead)
				ends := false
				for _, c := range []closing{first, second} {
					s := w.active
					if c.passive {
						s = w.passive
					}
					w.close(s, c.o)
					ends = ends || (c.o != objRegion && c.o != objWindow && c.o != objListener)
				}
				if ends {
					w.awaitEnd(w.active)
					w.awaitEnd(w.passive)
				}
				w.laterCalls(w.active)
				w.laterCalls(w.passive)
				w.closeEverything(nil)
				w.drain()
				w.report(t, first.String()+" then "+second.String())
			}})
		}
	}
	return cases
}

func lifecycleAfterCloseSharedCQ(t *testing.T, p nd.Provider) {
	w := mustWorld(t, p, true)
	w.close(w.active, objInCQ)
	w.laterCalls(w.active)
	w.closeEverything(nil)
	w.drain()
	w.report(t, "after the shared queue's Close")
	w.expectPrePostedCanceled(t)
}

func lifecycleInlineSinkReceive(t *testing.T, p nd.Provider) {
	testInlineSink(t, p, false)
}

func lifecycleInlineSinkRead(t *testing.T, p nd.Provider) {
	testInlineSink(t, p, true)
}

// mustWorld is newLCWorld for a test case, closed when the test ends.
func mustWorld(t *testing.T, p nd.Provider, shared bool) *lcWorld {
	t.Helper()
	w, err := newLCWorld(t, p, shared)
	if err != nil {
		t.Fatalf("%v", err)
	}
	t.Cleanup(func() { w.closeEverything(nil) })
	return w
}

// awaitEnd waits, for at most Timeout, until s learned that its connection
// ended (NotifyDisconnect), so that its later posts are those of an ended
// connection rather than of one whose end is still on its way (those
// complete too, but a transport may take its ResponseTimeout for them).
func (w *lcWorld) awaitEnd(s *lcSide) {
	c, cancel := ctxTimeout()
	defer cancel()
	s.c.NotifyDisconnect(c)
}

// expectPrePostedCanceled checks that the Receives the world posted before
// anything happened, for which no Send ever came, completed ErrCanceled.
func (w *lcWorld) expectPrePostedCanceled(t *testing.T) {
	t.Helper()
	w.ledger.mu.Lock()
	defer w.ledger.mu.Unlock()
	for _, q := range w.ledger.reqs {
		if q.what == q.side.name+" Receive" && q.completed == 1 && q.status != nd.ErrCanceled {
			t.Errorf("%s in flight when its endpoint closed completed %v; want %v", q.what, q.status, nd.ErrCanceled)
		}
	}
}

// laterCalls makes every call on the objects of s and checks each status
// against the closes made so far: ErrDeviceRemoved after the adapter
// closed, ErrInvalidHandle after the object (or one it depends on) closed;
// otherwise what an open object in an ended connection returns.
func (w *lcWorld) laterCalls(s *lcSide) {
	check := func(what string, o lcObject, call func() error, extra ...nd.Status) {
		deps := s.deps(o)
		anyBefore, adapterBefore := s.closedBefore(deps)
		w.checkCall(s, s.name+" "+what, deps, anyBefore, adapterBefore, call(), extra...)
	}
	ctx := context.Background()
	for _, op := range []lcOp{opSend, opReceive, opRead, opWrite, opBindAgain} {
		w.post(s, op)
	}
	check("Invalidate", objEndpoint, func() error {
		res := w.ledger.add(s.name+" Invalidate", s.out, s)
		err := s.ep.Invalidate(res, s.mw, 0)
		w.ledger.posted(res, err)
		return err
	}, nd.ErrInvalidParameter2, nd.ErrNoMoreEntries)
	check("Flush", objEndpoint, func() error { return s.ep.Flush() })
	for _, o := range []lcObject{objInCQ, objOutCQ} {
		w.notify(s, o)
		check(o.String()+".Resize", o, func() error {
			if o == objInCQ {
				return s.in.Resize(lcCQEntries)
			}
			return s.out.Resize(lcCQEntries)
		})
	}
	// The connection has ended (every close but a region's or a window's
	// ends it), or is still up.
	conn := objConnector
	check("GetConnectionData", conn, func() error { _, err := s.c.GetConnectionData(nil); return err })
	check("GetLocalAddress", conn, func() error { _, err := s.c.GetLocalAddress(); return err }, nd.ErrConnectionInvalid)
	check("GetPeerAddress", conn, func() error { _, err := s.c.GetPeerAddress(); return err }, nd.ErrConnectionInvalid)
	check("NotifyDisconnect", conn, func() error {
		c, cancel := context.WithTimeout(ctx, w.notifyTimeout)
		defer cancel()
		return s.c.NotifyDisconnect(c)
	}, nd.ErrCanceled)
	check("Reject", conn, func() error { return s.c.Reject(nil) }, nd.ErrConnectionInvalid)
	check("CompleteConnect", conn, func() error { return s.c.CompleteConnect(ctx) }, nd.ErrConnectionInvalid, nd.ErrConnectionAborted)
	check("Accept", conn, func() error { return s.c.Accept(ctx, s.ep, nil) },
		nd.ErrConnectionInvalid, nd.ErrConnectionActive, nd.ErrInvalidParameter1)
	check("Connect", conn, func() error {
		return s.c.Connect(ctx, s.ep, netip.AddrPortFrom(s.a.Address(), 1), Protocol, 0, nil)
	}, nd.ErrConnectionActive, nd.ErrInvalidDeviceState, nd.ErrInvalidParameter1, nd.ErrConnectionRefused)
	check("CreateEndpoint", conn, func() error {
		ep, err := s.c.CreateEndpoint(s.in, s.out, lcLimits)
		if err == nil {
			// The first endpoint closed: a connector has one at a time.
			ep.Close()
		}
		return err
	}, nd.ErrNotSupported, nd.ErrInvalidParameter1, nd.ErrInvalidParameter2)
	check("Disconnect", conn, func() error { return s.c.Disconnect(ctx) }, nd.ErrConnectionInvalid)
	if s.l != nil {
		check("GetConnectionRequest", objListener, func() error {
			c, err := s.a.CreateConnector()
			if err != nil {
				return err // the adapter closed
			}
			defer c.Close()
			cc, cancel := context.WithTimeout(ctx, w.notifyTimeout)
			defer cancel()
			return s.l.GetConnectionRequest(cc, c)
		}, nd.ErrCanceled)
	}
	a := objAdapter
	check("Query", a, func() error { _, err := s.a.Query(); return err })
	check("CreateCompletionQueue", a, func() error {
		q, err := s.a.CreateCompletionQueue(1)
		if err == nil {
			q.Close()
		}
		return err
	})
	check("CreateConnector", a, func() error {
		c, err := s.a.CreateConnector()
		if err == nil {
			c.Close()
		}
		return err
	})
	check("Listen", a, func() error {
		l, err := s.a.Listen(0, Protocol, 0)
		if err == nil {
			l.Close()
		}
		return err
	})
	check("RegisterMemory", a, func() error {
		mr, err := s.a.RegisterMemory(ctx, make([]byte, 8))
		if err == nil {
			s.a.DeregisterMemory(ctx, mr)
		}
		return err
	})
	check("CreateMemoryWindow", a, func() error {
		mw, err := s.a.CreateMemoryWindow(nil)
		if err == nil {
			mw.Close()
		}
		return err
	})
}

// testCreateEndpointAgain: a connector has one endpoint at a time; once it
// is closed, CreateEndpoint makes another, which connects.
func testCreateEndpointAgain(t *testing.T, p nd.Provider) {
	a, b := OpenAdapters(t, p)
	l := listen(t, b, 0)
	s := side(t, a)
	_, err := s.Connector.CreateEndpoint(s.InCQ, s.OutCQ, DefaultLimits)
	expectStatus(t, "CreateEndpoint while the connector's endpoint is open", err, nd.ErrNotSupported)
	r := postEmptyRecv(t, s)
	if err := s.Endpoint.Close(); err != nil {
		t.Fatalf("Endpoint.Close: %v", err)
	}
	Expect(t, s.InCQ, r, nd.ErrCanceled, -1)
	expectStatus(t, "Receive on the closed endpoint", s.Endpoint.Receive(new(nd.Result), nil), nd.ErrInvalidHandle)
	// A closed endpoint refuses a post before its parameters are looked at.
	expectStatus(t, "Send(nil Result) on the closed endpoint", s.Endpoint.Send(nil, nil, 0), nd.ErrInvalidHandle)
	expectStatus(t, "Receive(nil Result) on the closed endpoint", s.Endpoint.Receive(nil, nil), nd.ErrInvalidHandle)
	expectStatus(t, "Write with an unknown flag on the closed endpoint",
		s.Endpoint.Write(new(nd.Result), nil, nd.MWDescriptor{}, 0, nd.Flags(1<<30)), nd.ErrInvalidHandle)
	expectStatus(t, "Read with an unknown flag on the closed endpoint",
		s.Endpoint.Read(new(nd.Result), nil, nd.MWDescriptor{}, 0, nd.Flags(1<<30)), nd.ErrInvalidHandle)
	ep, err := s.Connector.CreateEndpoint(s.InCQ, s.OutCQ, DefaultLimits)
	if err != nil {
		t.Fatalf("CreateEndpoint after the first endpoint closed: %v; want a new endpoint", err)
	}
	t.Cleanup(func() { ep.Close() })
	expectStatus(t, "Connect with the closed endpoint", s.Connector.Connect(ctx(t), s.Endpoint, addrOf(b, l), Protocol, 0, nil), nd.ErrInvalidParameter1)
	s.Endpoint = ep
	connectTo(t, s, b, l, nil)
}

// testInlineSink: an entry without a region (inline data) cannot receive
// data; in a Receive or a Read sink it is a bad local entry, as one outside
// its registration: the post is accepted and the request completes
// ErrAccessViolation (ND lists no immediate error for it).
func testInlineSink(t *testing.T, p nd.Provider, read bool) {
	pr := NewPair(t, p, PairConfig{})
	sink := []nd.SGE{{Buffer: make([]byte, 8)}}
	var res nd.Result
	if read {
		_, _, desc := bindWindow(t, pr.Passive, make([]byte, 64), nd.FlagAllowRead, nil)
		if err := pr.Active.Endpoint.Read(&res, sink, desc, 0, 0); err != nil {
			t.Fatalf("Read into an inline entry: immediate %v; want a completion with %v", err, nd.ErrAccessViolation)
		}
		expectAccessViolation(t, pr.Active.OutCQ, &res, nd.CauseLocalAccess)
		return
	}
	if err := pr.Passive.Endpoint.Receive(&res, sink); err != nil {
		t.Fatalf("Receive into an inline entry: immediate %v; want a completion with %v", err, nd.ErrAccessViolation)
	}
	var sr nd.Result
	sendBuf(t, pr.Active, newBuffer(t, pr.Active, 8), &sr, 0)
	expectAccessViolation(t, pr.Passive.InCQ, &res, nd.CauseLocalAccess)
}

// testConcurrentClose: two goroutines close the same object of the active
// side at once (the adapter, a queue, the connector, the endpoint) and each
// then posts a Send on the endpoint, which must be refused with the closed
// status: the Close that finds the object closing already returns at once,
// before the first has closed the endpoint, and must not let a post
// through.
func testConcurrentClose(t *testing.T, p nd.Provider) {
	objects := []struct {
		name  string
		close func(s *Side) error
		want  nd.Status
	}{
		{"Adapter", func(s *Side) error { return s.Adapter.Close() }, nd.ErrDeviceRemoved},
		{"InCQ", func(s *Side) error { return s.InCQ.Close() }, nd.ErrInvalidHandle},
		{"OutCQ", func(s *Side) error { return s.OutCQ.Close() }, nd.ErrInvalidHandle},
		{"Connector", func(s *Side) error { return s.Connector.Close() }, nd.ErrInvalidHandle},
		{"Endpoint", func(s *Side) error { return s.Endpoint.Close() }, nd.ErrInvalidHandle},
	}
	for _, o := range objects {
		t.Run(o.name, func(t *testing.T) {
			for range 16 {
				pr := NewPair(t, p, PairConfig{})
				s := pr.Active
				// A post before the Closes passes the fast checks from then on.
				var warm, recv nd.Result
				mustPost(t, "Receive before the Closes", pr.Passive.PostReceive(&recv, nil))
				mustPost(t, "Send before the Closes", s.Endpoint.Send(&warm, nil, 0))
				Expect(t, s.OutCQ, &warm, nd.Success, 0)
				Expect(t, pr.Passive.InCQ, &recv, nd.Success, 0)
				errs := make(chan error, 2)
				var ready sync.WaitGroup
				ready.Add(2)
				start := make(chan struct{})
				for range 2 {
					go func() {
						ready.Done()
						<-start
						if err := o.close(s); err != nil {
							errs <- err
							return
						}
						errs <- s.Endpoint.Send(new(nd.Result), nil, 0)
					}()
				}
				ready.Wait()
				close(start)
				for range 2 {
					expectStatus(t, "Send after "+o.name+".Close returned", <-errs, o.want)
				}
			}
		})
	}
}
