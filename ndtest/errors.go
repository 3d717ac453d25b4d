package ndtest

import (
	"context"
	"errors"
	"testing"

	"github.com/godirect/nd"
)

var errorsCases = []testCase{
	{"Shape", `docs/semantics.md "error shape": a call refusing an argument returns an *nd.ArgError naming the Go argument with ND's status; a posting call or a call failing on state returns the bare nd.Status; a blocking call whose context ends returns an *nd.OpError naming the call`, errorShape},
}

// errorShape checks the shape of errors package nd documents ("Errors"):
// a blocking or creating call that refuses an argument returns an
// *nd.ArgError naming the call and the Go argument, with ND's status (the
// parameter's position in ND's C signature); a posting call, and a call
// that fails on its object's state, returns a bare nd.Status; a blocking
// call whose context ends returns an *nd.OpError naming the call, for
// which errors.Is holds for both nd.ErrCanceled and the context's error.
func errorShape(t *testing.T, p nd.Provider) {
	pr := NewPair(t, p, PairConfig{})
	s := pr.Active
	a := s.Adapter
	var res nd.Result
	closedCQ := mustCQ(t, a, 4)
	closedCQ.Close()
	_, badCQ := a.CreateCompletionQueue(0)
	_, badListen := a.Listen(-1, 0, 0)
	_, badProtocol := a.Listen(0, nd.MaxProtocol+1, 0)
	_, badRegister := a.RegisterMemory(ctx(t), nil)
	noInbound := DefaultLimits
	noInbound.InboundEntries = 0
	_, badLimits := mustConnector(t, a).CreateEndpoint(s.InCQ, s.OutCQ, noInbound)
	tooManySGE := DefaultLimits
	tooManySGE.OutboundSGE = query(t, a).MaxOutboundSGE + 1
	_, badSGE := mustConnector(t, a).CreateEndpoint(s.InCQ, s.OutCQ, tooManySGE)
	_, closedQueue := mustConnector(t, a).CreateEndpoint(s.InCQ, closedCQ, DefaultLimits)

	// A fresh side to connect with a bad protocol: ND's parameter 4, the
	// Go call's third argument.
	fresh := side(t, a)
	badConnect := fresh.Connector.Connect(ctx(t), fresh.Endpoint, addrOf(pr.Passive.Adapter, pr.Listener), nd.MaxProtocol+1, 0, nil)
	longData := make([]byte, query(t, a).MaxCallerData+1)
	longConnect := fresh.Connector.Connect(ctx(t), fresh.Endpoint, addrOf(pr.Passive.Adapter, pr.Listener), Protocol, 0, longData)

	for _, c := range []struct {
		call    string
		err     error
		op, arg string
		want    nd.Status
	}{
		{"CreateCompletionQueue(0)", badCQ, "CreateCompletionQueue", "entries", nd.ErrInvalidParameter},
		{"Listen(-1, 0, 0)", badListen, "Listen", "backlog", nd.ErrInvalidParameter1},
		{"Listen(0, 256, 0)", badProtocol, "Listen", "protocol", nd.ErrInvalidParameter2},
		{"RegisterMemory(nil)", badRegister, "RegisterMemory", "buf", nd.ErrInvalidParameter},
		{"CreateEndpoint(InboundEntries 0)", badLimits, "CreateEndpoint", "limits.InboundEntries", nd.ErrInvalidParameter3},
		{"CreateEndpoint(OutboundSGE beyond the adapter's)", badSGE, "CreateEndpoint", "limits.OutboundSGE", nd.ErrInvalidParameter6},
		{"CreateEndpoint(a closed outbound queue)", closedQueue, "CreateEndpoint", "outbound", nd.ErrInvalidParameter2},
		{"Connect(protocol 256)", badConnect, "Connect", "protocol", nd.ErrInvalidParameter4},
		{"Connect(MaxCallerData+1 bytes)", longConnect, "Connect", "privateData", nd.ErrInvalidBufferSize},
		{"Notify(99)", s.InCQ.Notify(ctx(t), 99), "Notify", "typ", nd.ErrInvalidParameter1},
		{"Resize(0)", s.InCQ.Resize(0), "Resize", "entries", nd.ErrInvalidParameter},
	} {
		var ae *nd.ArgError
		if !errors.As(c.err, &ae) || ae.Op != c.op || ae.Arg != c.arg || ae.Status != c.want || ae.Reason == "" {
			t.Errorf("%s = %#v (%v); want an *nd.ArgError of %s naming %s, with %v and a reason", c.call, c.err, c.err, c.op, c.arg, c.want)
		}
		if !errors.Is(c.err, c.want) || nd.StatusOf(c.err) != c.want {
			t.Errorf("%s = %v: errors.Is and StatusOf do not give %v", c.call, c.err, c.want)
		}
	}

	for _, c := range []struct {
		call string
		err  error
		want nd.Status
	}{
		{"Connect on a connected connector", s.Connector.Connect(ctx(t), s.Endpoint, addrOf(pr.Passive.Adapter, pr.Listener), Protocol, 0, nil), nd.ErrConnectionActive},
		{"Reject on a connected connector", s.Connector.Reject(nil), nd.ErrConnectionInvalid},
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
