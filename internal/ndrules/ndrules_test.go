package ndrules

import (
	"errors"
	"net/netip"
	"testing"

	"github.com/godirect/nd"
)

var info = nd.AdapterInfo{
	MaxInboundSGE: 4, MaxInboundRequests: 16, MaxInboundLength: 100,
	MaxOutboundSGE: 3, MaxOutboundRequests: 8, MaxOutboundLength: 200,
	MaxInlineData: 10, MaxInboundReadLimit: 2, MaxOutboundReadLimit: 5,
	MaxCQEntries: 64, MaxRegistrationSize: 1000, MaxCallerData: 20, MaxCalleeData: 30,
	MaxSharedReceiveQueueDepth: 32,
}

func want(t *testing.T, what string, got, want nd.Status) {
	t.Helper()
	if got != want {
		t.Errorf("%s = %v, want %v", what, got, want)
	}
}

// wantArg checks an argument check's error: nil for Success; otherwise an
// *nd.ArgError of call op naming arg, with ND's status st.
func wantArg(t *testing.T, what string, err error, op, arg string, st nd.Status) {
	t.Helper()
	if st == nd.Success {
		if err != nil {
			t.Errorf("%s = %v, want nil", what, err)
		}
		return
	}
	ae, ok := err.(*nd.ArgError)
	if !ok || ae.Op != op || ae.Arg != arg || ae.Status != st || ae.Reason == "" {
		t.Errorf("%s = %#v (%v), want an *nd.ArgError of %s for %s with %v and a reason", what, err, err, op, arg, st)
	}
}

func TestClosed(t *testing.T) {
	want(t, "Closed(false, false)", Closed(false, false), nd.Success)
	want(t, "Closed(false, true)", Closed(false, true), nd.ErrInvalidHandle)
	want(t, "Closed(true, false)", Closed(true, false), nd.ErrDeviceRemoved)
	want(t, "Closed(true, true)", Closed(true, true), nd.ErrDeviceRemoved)
}

func TestAdapterCalls(t *testing.T) {
	for _, c := range []struct {
		n    int
		want nd.Status
	}{{0, nd.ErrInvalidParameter}, {-1, nd.ErrInvalidParameter}, {1, nd.Success}, {64, nd.Success}, {65, nd.ErrInvalidParameter}} {
		wantArg(t, "CQEntries", CQEntries("CreateCompletionQueue", &info, c.n), "CreateCompletionQueue", "entries", c.want)
	}
	wantArg(t, "Resize(8, 8 queued)", Resize(&info, 8, 8), "Resize", "entries", nd.Success)
	wantArg(t, "Resize(7, 8 queued)", Resize(&info, 7, 8), "Resize", "entries", nd.ErrBufferOverflow)
	wantArg(t, "Resize(0, 8 queued)", Resize(&info, 0, 8), "Resize", "entries", nd.ErrInvalidParameter)
	wantArg(t, "Resize(65, 0 queued)", Resize(&info, 65, 0), "Resize", "entries", nd.ErrInvalidParameter)

	for _, typ := range []nd.NotifyType{nd.NotifyErrors, nd.NotifyAny, nd.NotifySolicited} {
		wantArg(t, "NotifyType", NotifyType(typ), "Notify", "typ", nd.Success)
	}
	wantArg(t, "NotifyType(99)", NotifyType(99), "Notify", "typ", nd.ErrInvalidParameter1)

	wantArg(t, "Listen(0, 0)", Listen(0, 0), "Listen", "", nd.Success)
	wantArg(t, "Listen(5, 255)", Listen(5, 255), "Listen", "", nd.Success)
	wantArg(t, "Listen(-1, 256)", Listen(-1, 256), "Listen", "backlog", nd.ErrInvalidParameter1)
	wantArg(t, "Listen(0, 256)", Listen(0, 256), "Listen", "protocol", nd.ErrInvalidParameter2)
	wantArg(t, "Listen(0, -1)", Listen(0, -1), "Listen", "protocol", nd.ErrInvalidParameter2)

	wantArg(t, "RegisterMemory(nil)", RegisterMemory(&info, nil), "RegisterMemory", "buf", nd.ErrInvalidParameter)
	wantArg(t, "RegisterMemory(empty)", RegisterMemory(&info, []byte{}), "RegisterMemory", "buf", nd.ErrInvalidBufferSize)
	wantArg(t, "RegisterMemory(1000)", RegisterMemory(&info, make([]byte, 1000)), "RegisterMemory", "buf", nd.Success)
	wantArg(t, "RegisterMemory(1001)", RegisterMemory(&info, make([]byte, 1001)), "RegisterMemory", "buf", nd.ErrInvalidParameter)
}

// TestArgErrorText checks what a program's log shows for a refused
// argument: the Go call and argument first, ND's status after.
func TestArgErrorText(t *testing.T) {
	good := netip.MustParseAddrPort("192.0.2.1:7")
	for _, c := range []struct {
		err  error
		want string
	}{
		{ConnectParams(&info, good, 300, 0), "nd: Connect: protocol: 300 is outside 0..255 (ND_INVALID_PARAMETER_4)"},
		{ConnectParams(&info, good, 6, 21), "nd: Connect: privateData: 21 bytes, more than the adapter's MaxCallerData (20) (ND_INVALID_BUFFER_SIZE)"},
		{Listen(0, 256), "nd: Listen: protocol: 256 is outside 0..255 (ND_INVALID_PARAMETER_2)"},
		{EndpointLimits("CreateEndpoint", &info, &nd.EndpointLimits{InboundEntries: 1, OutboundEntries: 1, OutboundSGE: 9}),
			"nd: CreateEndpoint: limits.OutboundSGE: 9 is outside 0..3 (the adapter's MaxOutboundSGE) (ND_INVALID_PARAMETER_6)"},
		{Arg("Accept", "ep", nd.ErrInvalidParameter1, ""), "nd: Accept: ep: not valid (ND_INVALID_PARAMETER_1)"},
	} {
		if c.err == nil || c.err.Error() != c.want {
			t.Errorf("error %q, want %q", c.err, c.want)
		}
	}
	if err := Listen(0, 256); !errors.Is(err, nd.ErrInvalidParameter2) || nd.StatusOf(err) != nd.ErrInvalidParameter2 {
		t.Errorf("Listen(0, 256) = %v: errors.Is and StatusOf do not give ND_INVALID_PARAMETER_2", err)
	}
}

func TestEndpointLimits(t *testing.T) {
	ok := nd.EndpointLimits{InboundEntries: 1, OutboundEntries: 1}
	wantArg(t, "minimal limits", EndpointLimits("CreateEndpoint", &info, &ok), "", "", nd.Success)
	top := nd.EndpointLimits{InboundEntries: 16, OutboundEntries: 8, InboundSGE: 4, OutboundSGE: 3, InboundReadLimit: 2, OutboundReadLimit: 5}
	wantArg(t, "the adapter's limits", EndpointLimits("CreateEndpoint", &info, &top), "", "", nd.Success)
	fields := []struct {
		name  string
		field func(*nd.EndpointLimits) *int
		low   int
		want  nd.Status
	}{
		{"InboundEntries", func(l *nd.EndpointLimits) *int { return &l.InboundEntries }, 0, nd.ErrInvalidParameter3},
		{"OutboundEntries", func(l *nd.EndpointLimits) *int { return &l.OutboundEntries }, 0, nd.ErrInvalidParameter4},
		{"InboundSGE", func(l *nd.EndpointLimits) *int { return &l.InboundSGE }, -1, nd.ErrInvalidParameter5},
		{"OutboundSGE", func(l *nd.EndpointLimits) *int { return &l.OutboundSGE }, -1, nd.ErrInvalidParameter6},
		{"InboundReadLimit", func(l *nd.EndpointLimits) *int { return &l.InboundReadLimit }, -1, nd.ErrInvalidParameter7},
		{"OutboundReadLimit", func(l *nd.EndpointLimits) *int { return &l.OutboundReadLimit }, -1, nd.ErrInvalidParameter8},
	}
	for _, f := range fields {
		l := top
		*f.field(&l)++
		wantArg(t, f.name+" beyond the adapter's", EndpointLimits("CreateEndpointWithSRQ", &info, &l), "CreateEndpointWithSRQ", "limits."+f.name, f.want)
		l = top
		*f.field(&l) = f.low
		wantArg(t, f.name+" too low", EndpointLimits("CreateEndpoint", &info, &l), "CreateEndpoint", "limits."+f.name, f.want)
	}
	wantArg(t, "CreateEndpoint(bad inbound queue)", CreateEndpoint("CreateEndpoint", &info, false, false, &top), "CreateEndpoint", "inbound", nd.ErrInvalidParameter1)
	wantArg(t, "CreateEndpoint(bad outbound queue)", CreateEndpoint("CreateEndpoint", &info, true, false, &top), "CreateEndpoint", "outbound", nd.ErrInvalidParameter2)
	wantArg(t, "CreateEndpoint", CreateEndpoint("CreateEndpoint", &info, true, true, &top), "", "", nd.Success)
	all := nd.EndpointLimits{InboundEntries: 17, OutboundEntries: 9, InboundSGE: 5, OutboundSGE: 4, InboundReadLimit: 3, OutboundReadLimit: 6}
	wantArg(t, "every limit too high: the first position", EndpointLimits("CreateEndpoint", &info, &all), "CreateEndpoint", "limits.InboundEntries", nd.ErrInvalidParameter3)
}

func TestSharedReceiveQueueLimits(t *testing.T) {
	for _, c := range []struct {
		l    nd.SharedReceiveQueueLimits
		arg  string
		want nd.Status
	}{
		{nd.SharedReceiveQueueLimits{Entries: 32, SGE: 4, NotifyThreshold: 32}, "", nd.Success},
		{nd.SharedReceiveQueueLimits{Entries: 0}, "limits.Entries", nd.ErrInvalidParameter3},
		{nd.SharedReceiveQueueLimits{Entries: 33}, "limits.Entries", nd.ErrInvalidParameter3},
		{nd.SharedReceiveQueueLimits{Entries: 1, SGE: 5}, "limits.SGE", nd.ErrInvalidParameter4},
		{nd.SharedReceiveQueueLimits{Entries: 1, SGE: -1}, "limits.SGE", nd.ErrInvalidParameter4},
		{nd.SharedReceiveQueueLimits{Entries: 4, NotifyThreshold: 5}, "limits.NotifyThreshold", nd.ErrInvalidParameter5},
		{nd.SharedReceiveQueueLimits{Entries: 4, NotifyThreshold: -1}, "limits.NotifyThreshold", nd.ErrInvalidParameter5},
	} {
		wantArg(t, "SharedReceiveQueueLimits", SharedReceiveQueueLimits(&info, &c.l), "CreateSharedReceiveQueue", c.arg, c.want)
	}
}

func TestCreateSharedReceiveQueue(t *testing.T) {
	good := nd.SharedReceiveQueueLimits{Entries: 4}
	bad := nd.SharedReceiveQueueLimits{Entries: 0}
	none := info
	none.MaxSharedReceiveQueueDepth = 0
	const op = "CreateSharedReceiveQueue"
	wantArg(t, "open adapter, good queue and limits", CreateSharedReceiveQueue(false, &info, true, &good), op, "", nd.Success)
	if err := CreateSharedReceiveQueue(true, &none, false, &bad); err != nd.ErrDeviceRemoved {
		t.Errorf("closed adapter, before every other check: %v, want the bare ErrDeviceRemoved", err)
	}
	if err := CreateSharedReceiveQueue(false, &none, false, &bad); err != nd.ErrNotSupported {
		t.Errorf("no shared receive queues, before the queue's check: %v, want the bare ErrNotSupported", err)
	}
	wantArg(t, "foreign or closed completion queue, before the limits", CreateSharedReceiveQueue(false, &info, false, &bad), op, "cq", nd.ErrInvalidParameter1)
	wantArg(t, "the limits last", CreateSharedReceiveQueue(false, &info, true, &bad), op, "limits.Entries", nd.ErrInvalidParameter3)
}

type region struct{}

func (region) Bytes() []byte { return nil }

func TestPost(t *testing.T) {
	var res nd.Result
	lim := PostLimits{MaxSGE: 2, MaxLength: 100, MaxInline: 10}
	reg := region{}
	for _, c := range []struct {
		name  string
		op    Outbound
		res   *nd.Result
		sgl   []nd.SGE
		flags nd.Flags
		total int
		want  nd.Status
	}{
		{"empty Send", Send, &res, nil, 0, 0, nd.Success},
		{"Send at the limits", Send, &res, []nd.SGE{{Buffer: make([]byte, 10)}, {Buffer: make([]byte, 90), Region: reg}}, nd.FlagSendAndSolicitEvent | nd.FlagSilentSuccess | nd.FlagReadFence, 100, nd.Success},
		{"Send with a bad flag", Send, &res, nil, nd.FlagAllowRead, 0, nd.ErrInvalidParameter4},
		{"SendAndInvalidate with a bad flag", SendAndInvalidate, &res, nil, nd.FlagAllowWrite, 0, nd.ErrInvalidParameter5},
		{"Read that solicits", Read, &res, nil, nd.FlagSendAndSolicitEvent, 0, nd.ErrInvalidParameter6},
		{"Write that solicits", Write, &res, nil, nd.FlagSendAndSolicitEvent, 0, nd.ErrInvalidParameter6},
		{"bad flag before nil Result", Write, nil, nil, nd.FlagSendAndSolicitEvent, 0, nd.ErrInvalidParameter6},
		{"nil Result", Send, nil, nil, 0, 0, nd.ErrInvalidParameter1},
		{"too many entries", Write, &res, make([]nd.SGE, 3), 0, 0, nd.ErrDataOverrun},
		{"too long", Send, &res, []nd.SGE{{Buffer: make([]byte, 101), Region: reg}}, 0, 0, nd.ErrBufferOverflow},
		{"too much inline data", Send, &res, []nd.SGE{{Buffer: make([]byte, 11)}}, 0, 0, nd.ErrBufferOverflow},
		{"a Read's inline entries do not count as inline", Read, &res, []nd.SGE{{Buffer: make([]byte, 11)}}, 0, 11, nd.Success},
	} {
		total, st := Post(c.op, c.res, c.sgl, c.flags, lim)
		want(t, c.name, st, c.want)
		if total != c.total {
			t.Errorf("%s: total %d, want %d", c.name, total, c.total)
		}
	}
}

func TestReceive(t *testing.T) {
	var res nd.Result
	lim := PostLimits{MaxSGE: 2, MaxLength: 100}
	total, st := Receive(&res, []nd.SGE{{Buffer: make([]byte, 60)}, {Buffer: make([]byte, 40)}}, lim)
	want(t, "Receive at the limits", st, nd.Success)
	if total != 100 {
		t.Errorf("total %d, want 100", total)
	}
	_, st = Receive(nil, make([]nd.SGE, 3), lim)
	want(t, "nil Result", st, nd.ErrInvalidParameter1)
	_, st = Receive(&res, make([]nd.SGE, 3), lim)
	want(t, "too many entries", st, nd.ErrDataOverrun)
	_, st = Receive(&res, []nd.SGE{{Buffer: make([]byte, 101)}}, lim)
	want(t, "too long", st, nd.ErrBufferOverflow)
}

func TestBindInvalidate(t *testing.T) {
	var res nd.Result
	r := nd.FlagAllowRead
	want(t, "Bind", Bind(&res, true, true, true, r|nd.FlagAllowWrite|nd.FlagSilentSuccess|nd.FlagReadFence), nd.Success)
	want(t, "Bind nil Result", Bind(nil, false, false, false, 0), nd.ErrInvalidParameter1)
	want(t, "Bind bad region", Bind(&res, false, false, false, 0), nd.ErrAccessViolation)
	want(t, "Bind bad window", Bind(&res, true, false, false, 0), nd.ErrInvalidParameter3)
	want(t, "Bind outside the region", Bind(&res, true, true, false, 0), nd.ErrInvalidParameter4)
	want(t, "Bind without rights", Bind(&res, true, true, true, nd.FlagSilentSuccess), nd.ErrInvalidParameter6)
	want(t, "Bind with a Send flag", Bind(&res, true, true, true, r|nd.FlagSendAndSolicitEvent), nd.ErrInvalidParameter6)

	want(t, "Invalidate", Invalidate(&res, true, nd.FlagSilentSuccess|nd.FlagReadFence), nd.Success)
	want(t, "Invalidate nil Result", Invalidate(nil, false, r), nd.ErrInvalidParameter1)
	want(t, "Invalidate bad window", Invalidate(&res, false, r), nd.ErrInvalidParameter2)
	want(t, "Invalidate with a right", Invalidate(&res, true, r), nd.ErrInvalidParameter3)

	want(t, "Admit Receive before the connection", Admit(false, false, false), nd.Success)
	want(t, "Admit Send before the connection", Admit(true, false, true), nd.ErrConnectionInvalid)
	want(t, "Admit into a full queue", Admit(true, true, true), nd.ErrNoMoreEntries)
	want(t, "Admit", Admit(true, true, false), nd.Success)
}

func TestConnState(t *testing.T) {
	type row struct {
		connect, complete, accept, reject, addrs, disconnect, disconnectAgain nd.Status
		notifyWait                                                            bool
		notify                                                                nd.Status
	}
	const (
		ok  = nd.Success
		act = nd.ErrConnectionActive
		inv = nd.ErrConnectionInvalid
		abt = nd.ErrConnectionAborted
	)
	rows := map[ConnState]row{
		Idle:       {ok, inv, inv, inv, inv, inv, inv, false, inv},
		Connecting: {act, inv, inv, inv, inv, inv, inv, false, inv},
		Replied:    {act, ok, inv, ok, ok, inv, inv, false, inv},
		Requested:  {act, inv, ok, ok, ok, inv, inv, false, inv},
		Accepting:  {act, inv, act, inv, ok, inv, inv, false, inv},
		Connected:  {act, inv, act, inv, ok, ok, ok, true, ok},
		Aborted:    {ok, abt, abt, abt, inv, inv, inv, false, inv},
		Ended:      {nd.ErrInvalidDeviceState, inv, inv, inv, inv, ok, inv, false, ok},
	}
	for s, r := range rows {
		want(t, "Connect", s.Connect(), r.connect)
		want(t, "CompleteConnect", s.CompleteConnect(), r.complete)
		want(t, "Accept", s.Accept(), r.accept)
		want(t, "Reject", s.Reject(), r.reject)
		want(t, "Addresses", s.Addresses(), r.addrs)
		want(t, "Disconnect", s.Disconnect(false), r.disconnect)
		want(t, "Disconnect again", s.Disconnect(true), r.disconnectAgain)
		wait, st := s.NotifyDisconnect()
		want(t, "NotifyDisconnect", st, r.notify)
		if wait != r.notifyWait {
			t.Errorf("state %d: NotifyDisconnect waits %v, want %v", s, wait, r.notifyWait)
		}
		if got := s == Connecting || s == Replied || s == Accepting; s.Attempting() != got {
			t.Errorf("state %d: Attempting %v", s, s.Attempting())
		}
	}
}

func TestConnectParams(t *testing.T) {
	good := netip.MustParseAddrPort("192.0.2.1:7")
	wantArg(t, "ConnectParams", ConnectParams(&info, good, 255, 20), "Connect", "", nd.Success)
	wantArg(t, "no address", ConnectParams(&info, netip.AddrPort{}, 256, 21), "Connect", "remote", nd.ErrInvalidAddress)
	wantArg(t, "port 0", ConnectParams(&info, netip.MustParseAddrPort("192.0.2.1:0"), 0, 0), "Connect", "remote", nd.ErrInvalidAddress)
	wantArg(t, "protocol 256", ConnectParams(&info, good, 256, 21), "Connect", "protocol", nd.ErrInvalidParameter4)
	wantArg(t, "protocol -1", ConnectParams(&info, good, -1, 0), "Connect", "protocol", nd.ErrInvalidParameter4)
	wantArg(t, "caller data too long", ConnectParams(&info, good, 0, 21), "Connect", "privateData", nd.ErrInvalidBufferSize)
	wantArg(t, "CalleeData(30)", CalleeData("Accept", &info, 30), "Accept", "privateData", nd.Success)
	wantArg(t, "CalleeData(31)", CalleeData("Reject", &info, 31), "Reject", "privateData", nd.ErrInvalidBufferSize)
}

func TestConnectionData(t *testing.T) {
	peer := []byte("hello")
	buf := make([]byte, 8)
	cd, st := ConnectionData(&info, 9, 1, peer, buf)
	want(t, "ConnectionData", st, nd.Success)
	if cd != (nd.ConnectionData{InboundReadLimit: 1, OutboundReadLimit: 5, PrivateDataLength: 5}) || string(buf[:5]) != "hello" {
		t.Errorf("ConnectionData = %+v, %q", cd, buf)
	}
	short := make([]byte, 2)
	cd, st = ConnectionData(&info, -1, 7, peer, short)
	want(t, "ConnectionData into a short buffer", st, nd.ErrBufferOverflow)
	if cd != (nd.ConnectionData{InboundReadLimit: 2, OutboundReadLimit: 0, PrivateDataLength: 5}) || string(short) != "he" {
		t.Errorf("ConnectionData = %+v, %q", cd, short)
	}
}

func TestNoAllocations(t *testing.T) {
	var res nd.Result
	sgl := []nd.SGE{{Buffer: make([]byte, 8)}}
	lim := PostLimits{MaxSGE: 2, MaxLength: 100, MaxInline: 10}
	var total int
	var st nd.Status
	n := testing.AllocsPerRun(100, func() {
		total, st = Post(Send, &res, sgl, 0, lim)
		_, st = Receive(&res, sgl, lim)
		st = Bind(&res, true, true, true, nd.FlagAllowRead)
		st = Admit(true, true, false)
	})
	if total != 8 || st != nd.Success {
		t.Errorf("checks gave %d, %v", total, st)
	}
	if n != 0 {
		t.Errorf("%v allocations per check, want 0", n)
	}
}
