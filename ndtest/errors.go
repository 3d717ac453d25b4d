package ndtest

import (
	"context"
	"errors"
	"testing"

	"github.com/godirect/nd"
)

var errorsCases = []testCase{
	{"Shape", "docs/semantics.md (and package nd's \"Errors\"): a call failing on its parameters or state returns the bare nd.Status; a blocking call whose context ends returns an *nd.OpError naming the call", errorShape},
}

// errorShape checks the shape of errors package nd documents ("Errors"):
// a call that fails on its parameters or its object's state returns a bare
// nd.Status, and a blocking call whose context ends returns an *nd.OpError
// naming the call, for which errors.Is holds for both nd.ErrCanceled and
// the context's error.
func errorShape(t *testing.T, p nd.Provider) {
	pr := NewPair(t, p, PairConfig{})
	s := pr.Active
	a := s.Adapter
	var res nd.Result
	closedCQ := mustCQ(t, a, 4)
	closedCQ.Close()
	_, badCQ := a.CreateCompletionQueue(0)
	_, badListen := a.Listen(-1, 0, 0)
	_, badRegister := a.RegisterMemory(ctx(t), nil)
	noInbound := DefaultLimits
	noInbound.InboundEntries = 0
	_, badLimits := mustConnector(t, a).CreateEndpoint(s.InCQ, s.OutCQ, noInbound)
	for _, c := range []struct {
		call string
		err  error
		want nd.Status
	}{
		{"CreateCompletionQueue(0)", badCQ, nd.ErrInvalidParameter},
		{"Listen(-1, 0, 0)", badListen, nd.ErrInvalidParameter1},
		{"RegisterMemory(nil)", badRegister, nd.ErrInvalidParameter},
		{"CreateEndpoint(InboundEntries 0)", badLimits, nd.ErrInvalidParameter3},
		{"Connect on a connected connector", s.Connector.Connect(ctx(t), s.Endpoint, addrOf(pr.Passive.Adapter, pr.Listener), Protocol, 0, nil), nd.ErrConnectionActive},
		{"Reject on a connected connector", s.Connector.Reject(nil), nd.ErrConnectionInvalid},
		{"Notify(99)", s.InCQ.Notify(ctx(t), 99), nd.ErrInvalidParameter1},
		{"Resize(0)", s.InCQ.Resize(0), nd.ErrInvalidParameter},
		{"Notify on a closed queue", closedCQ.Notify(ctx(t), nd.NotifyAny), nd.ErrInvalidHandle},
		{"Send(nil Result)", s.Endpoint.Send(nil, nil, 0), nd.ErrInvalidParameter1},
		{"Send with FlagAllowRead", s.Endpoint.Send(&res, nil, nd.FlagAllowRead), nd.ErrInvalidParameter4},
		{"Receive with too many entries", s.Endpoint.Receive(&res, make([]nd.SGE, DefaultLimits.InboundSGE+1)), nd.ErrDataOverrun},
		{"Write with too many entries", s.Endpoint.Write(&res, make([]nd.SGE, DefaultLimits.OutboundSGE+1), nd.MWDescriptor{}, 0, 0), nd.ErrDataOverrun},
	} {
		st, ok := c.err.(nd.Status)
		if !ok || st != c.want {
			t.Errorf("%s = %#v (%v); want the bare nd.Status %v", c.call, c.err, c.err, c.want)
		}
	}

	cq := mustCQ(t, a, 4)
	cctx, cancel := context.WithCancel(ctx(t))
	cancel()
	err := cq.Notify(cctx, nd.NotifyAny)
	var oe *nd.OpError
	if !errors.As(err, &oe) || oe.Op != "Notify" || oe.Status != nd.ErrCanceled ||
		!errors.Is(err, nd.ErrCanceled) || !errors.Is(err, context.Canceled) {
		t.Errorf("Notify with a canceled context = %#v (%v); want an *nd.OpError for Notify that is nd.ErrCanceled and context.Canceled", err, err)
	}
	if st := nd.StatusOf(err); st != nd.ErrCanceled {
		t.Errorf("StatusOf(%v) = %v, want ErrCanceled", err, st)
	}
}
