package remote

import (
	"context"
	"net/netip"

	"github.com/godirect/nd"
)

// Operations. Each is merged (memory travels with it; it does not block
// for long) or blocking (memory is exchanged before and after it); blocking
// operations marked ack are acknowledged by the child once they block inside
// its provider.
const (
	opSync = iota + 1
	opOpenAdapter
	opQuery
	opCreateCQ
	opRegister
	opDeregister
	opCreateMW
	opCreateConnector
	opListen
	opAdapterClose
	opGetResults
	opNotify
	opResize
	opCQClose
	opCreateEndpoint
	opConnect
	opCompleteConnect
	opAccept
	opReject
	opGetConnectionData
	opGetLocalAddress
	opGetPeerAddress
	opNotifyDisconnect
	opDisconnect
	opConnectorClose
	opGetConnectionRequest
	opListenerClose
	opSend
	opSendAndInvalidate
	opReceive
	opBind
	opInvalidate
	opRead
	opWrite
	opFlush
	opStartBatch
	opSubmitBatch
	opEndpointClose
	opWindowClose
	opCreateSRQ
	opSRQReceive
	opSRQNotify
	opSRQFlush
	opSRQClose
	opCreateEndpointWithSRQ
	opDisconnectReason
	opCount
)

type opKind struct {
	name     string
	blocking bool
	ack      bool
}

var ops = [opCount]opKind{
	opSync:                  {name: "Sync"},
	opOpenAdapter:           {name: "OpenAdapter"},
	opQuery:                 {name: "Query"},
	opCreateCQ:              {name: "CreateCompletionQueue"},
	opRegister:              {name: "RegisterMemory"},
	opDeregister:            {name: "DeregisterMemory"},
	opCreateMW:              {name: "CreateMemoryWindow"},
	opCreateConnector:       {name: "CreateConnector"},
	opListen:                {name: "Listen"},
	opAdapterClose:          {name: "Adapter.Close", blocking: true},
	opGetResults:            {name: "GetResults"},
	opNotify:                {name: "Notify", blocking: true, ack: true},
	opResize:                {name: "Resize"},
	opCQClose:               {name: "CompletionQueue.Close", blocking: true},
	opCreateEndpoint:        {name: "CreateEndpoint"},
	opConnect:               {name: "Connect", blocking: true, ack: true},
	opCompleteConnect:       {name: "CompleteConnect", blocking: true, ack: true},
	opAccept:                {name: "Accept", blocking: true, ack: true},
	opReject:                {name: "Reject"},
	opGetConnectionData:     {name: "GetConnectionData"},
	opGetLocalAddress:       {name: "GetLocalAddress"},
	opGetPeerAddress:        {name: "GetPeerAddress"},
	opNotifyDisconnect:      {name: "NotifyDisconnect", blocking: true, ack: true},
	opDisconnect:            {name: "Disconnect", blocking: true, ack: true},
	opConnectorClose:        {name: "Connector.Close", blocking: true},
	opGetConnectionRequest:  {name: "GetConnectionRequest", blocking: true, ack: true},
	opListenerClose:         {name: "Listener.Close", blocking: true},
	opSend:                  {name: "Send"},
	opSendAndInvalidate:     {name: "SendAndInvalidate"},
	opReceive:               {name: "Receive"},
	opBind:                  {name: "Bind"},
	opInvalidate:            {name: "Invalidate"},
	opRead:                  {name: "Read"},
	opWrite:                 {name: "Write"},
	opFlush:                 {name: "Flush"},
	opStartBatch:            {name: "StartRequestBatch"},
	opSubmitBatch:           {name: "SubmitRequestBatch"},
	opEndpointClose:         {name: "Endpoint.Close", blocking: true},
	opWindowClose:           {name: "MemoryWindow.Close"},
	opCreateSRQ:             {name: "CreateSharedReceiveQueue"},
	opSRQReceive:            {name: "SharedReceiveQueue.Receive"},
	opSRQNotify:             {name: "SharedReceiveQueue.Notify", blocking: true, ack: true},
	opSRQFlush:              {name: "SharedReceiveQueue.Flush"},
	opSRQClose:              {name: "SharedReceiveQueue.Close", blocking: true},
	opCreateEndpointWithSRQ: {name: "CreateEndpointWithSRQ"},
	opDisconnectReason:      {name: "DisconnectReason"},
}

// do runs request f (op, obj and arguments set) as its kind requires.
func (c *Client) do(ctx context.Context, f *frame, named []*rRegion, hook func(*frame, error)) (*frame, error) {
	if ops[f.op].blocking {
		r, err := c.blocking(ctx, f)
		if hook != nil {
			c.syncMu.Lock()
			hook(r, err)
			c.syncMu.Unlock()
		}
		return r, err
	}
	return c.merged(ctx, f, named, hook)
}

func i64(vs ...int) []int64 {
	out := make([]int64, len(vs))
	for i, v := range vs {
		out[i] = int64(v)
	}
	return out
}

// rAdapter is a proxied adapter.
type rAdapter struct {
	c    *Client
	id   uint64
	addr netip.Addr
}

var _ nd.Adapter = (*rAdapter)(nil)

func (a *rAdapter) Address() netip.Addr { return a.addr }

func (a *rAdapter) Query() (nd.AdapterInfo, error) {
	r, err := a.c.do(noCancel, &frame{op: opQuery, obj: a.id}, nil, nil)
	if err != nil {
		return nd.AdapterInfo{}, err
	}
	return nd.AdapterInfo{
		VendorID: uint32(r.int(0)), DeviceID: uint32(r.int(1)),
		MaxInboundSGE: int(r.int(2)), MaxInboundRequests: int(r.int(3)), MaxInboundLength: int(r.int(4)),
		MaxOutboundSGE: int(r.int(5)), MaxOutboundRequests: int(r.int(6)), MaxOutboundLength: int(r.int(7)),
		MaxInlineData: int(r.int(8)), MaxInboundReadLimit: int(r.int(9)), MaxOutboundReadLimit: int(r.int(10)),
		MaxCQEntries: int(r.int(11)), MaxRegistrationSize: int(r.int(12)), MaxWindowSize: int(r.int(13)),
		LargeRequestThreshold: int(r.int(14)), MaxCallerData: int(r.int(15)), MaxCalleeData: int(r.int(16)),
		Flags: nd.AdapterFlags(r.int(17)), MaxSharedReceiveQueueDepth: int(r.int(18)),
	}, nil
}

func infoInts(i nd.AdapterInfo) []int64 {
	return []int64{int64(i.VendorID), int64(i.DeviceID),
		int64(i.MaxInboundSGE), int64(i.MaxInboundRequests), int64(i.MaxInboundLength),
		int64(i.MaxOutboundSGE), int64(i.MaxOutboundRequests), int64(i.MaxOutboundLength),
		int64(i.MaxInlineData), int64(i.MaxInboundReadLimit), int64(i.MaxOutboundReadLimit),
		int64(i.MaxCQEntries), int64(i.MaxRegistrationSize), int64(i.MaxWindowSize),
		int64(i.LargeRequestThreshold), int64(i.MaxCallerData), int64(i.MaxCalleeData),
		int64(i.Flags), int64(i.MaxSharedReceiveQueueDepth)}
}

func (a *rAdapter) CreateCompletionQueue(entries int) (nd.CompletionQueue, error) {
	id := a.c.newID()
	if _, err := a.c.do(noCancel, &frame{op: opCreateCQ, obj: a.id, ints: i64(int(id), entries)}, nil, nil); err != nil {
		return nil, err
	}
	return &rCQ{c: a.c, id: id}, nil
}

func (a *rAdapter) RegisterMemory(ctx context.Context, buf []byte) (nd.MemoryRegion, error) {
	id := a.c.newID()
	isNil := 0
	if buf == nil {
		isNil = 1
	}
	r := &rRegion{c: a.c, a: a, id: id, buf: buf}
	_, err := a.c.do(ctx, &frame{op: opRegister, obj: a.id, ints: i64(int(id), len(buf), isNil)}, nil, func(_ *frame, err error) {
		if err == nil {
			a.c.regions[id] = r
		}
	})
	if err != nil {
		return nil, err
	}
	return r, nil
}

func (a *rAdapter) DeregisterMemory(ctx context.Context, mr nd.MemoryRegion) error {
	ref := a.c.regionRef(mr)
	_, err := a.c.do(ctx, &frame{op: opDeregister, obj: a.id, ints: i64(int(ref))}, nil, func(_ *frame, err error) {
		if err == nil {
			delete(a.c.active, ref)
		}
	})
	return err
}

func (a *rAdapter) CreateMemoryWindow(invalidateResult *nd.Result) (nd.MemoryWindow, error) {
	id := a.c.newID()
	w := &rWindow{c: a.c, a: a, id: id, res: invalidateResult}
	args := i64(int(id), 0, 0, 0)
	if invalidateResult != nil {
		w.status, w.bytes = readResultNoRace(invalidateResult)
		args = i64(int(id), 1, int(w.status), w.bytes)
	}
	_, err := a.c.do(noCancel, &frame{op: opCreateMW, obj: a.id, ints: args}, nil, func(_ *frame, err error) {
		if err == nil && invalidateResult != nil {
			a.c.windows[id] = w
		}
	})
	if err != nil {
		return nil, err
	}
	return w, nil
}

func (a *rAdapter) CreateConnector() (nd.Connector, error) {
	id := a.c.newID()
	if _, err := a.c.do(noCancel, &frame{op: opCreateConnector, obj: a.id, ints: i64(int(id))}, nil, nil); err != nil {
		return nil, err
	}
	return &rConnector{c: a.c, id: id}, nil
}

func (a *rAdapter) Listen(backlog, protocol int, port uint16) (nd.Listener, error) {
	id := a.c.newID()
	r, err := a.c.do(noCancel, &frame{op: opListen, obj: a.id, ints: i64(int(id), backlog, protocol, int(port))}, nil, nil)
	if err != nil {
		return nil, err
	}
	return &rListener{c: a.c, id: id, port: uint16(r.int(0))}, nil
}

func (a *rAdapter) Close() error {
	_, err := a.c.do(noCancel, &frame{op: opAdapterClose, obj: a.id}, nil, func(*frame, error) {
		a.c.dropAdapterLocked(a)
	})
	return err
}

func (a *rAdapter) CreateSharedReceiveQueue(cq nd.CompletionQueue, l nd.SharedReceiveQueueLimits) (nd.SharedReceiveQueue, error) {
	id := a.c.newID()
	f := &frame{op: opCreateSRQ, obj: a.id, ints: i64(int(id), int(a.c.cqRef(cq)), l.Entries, l.SGE, l.NotifyThreshold)}
	if _, err := a.c.do(noCancel, f, nil, nil); err != nil {
		return nil, err
	}
	return &rSRQ{c: a.c, id: id}, nil
}

// rSRQ is a proxied shared receive queue.
type rSRQ struct {
	c  *Client
	id uint64
}

var _ nd.SharedReceiveQueue = (*rSRQ)(nil)

func (s *rSRQ) Receive(res *nd.Result, sgl []nd.SGE) error {
	sges, named := s.c.sgl(sgl)
	rid := s.c.addResult(res)
	_, err := s.c.do(noCancel, &frame{op: opSRQReceive, obj: s.id, ints: i64(int(rid)), sges: sges}, named, nil)
	if err != nil {
		s.c.dropResult(rid)
	}
	return err
}

func (s *rSRQ) Notify(ctx context.Context) error {
	_, err := s.c.do(ctx, &frame{op: opSRQNotify, obj: s.id}, nil, nil)
	return err
}

func (s *rSRQ) Flush() error {
	_, err := s.c.do(noCancel, &frame{op: opSRQFlush, obj: s.id}, nil, nil)
	return err
}

func (s *rSRQ) Close() error {
	_, err := s.c.do(noCancel, &frame{op: opSRQClose, obj: s.id}, nil, nil)
	return err
}

func (c *Client) srqRef(x nd.SharedReceiveQueue) uint64 {
	switch v := x.(type) {
	case nil:
		return 0
	case *rSRQ:
		if v.c == c {
			return v.id
		}
	}
	return refForeign
}

// rRegion is a registration of a proxied adapter: buf is the caller's, the
// child registered a buffer of its own of the same length.
type rRegion struct {
	c   *Client
	a   *rAdapter
	id  uint64
	buf []byte

	shadow []byte // guarded by c.syncMu; allocated on the first push
}

var _ nd.MemoryRegion = (*rRegion)(nil)

func (r *rRegion) Bytes() []byte { return r.buf }

// pushLocked appends the chunks of buf that changed since the last
// exchange. A region never exchanged has no shadow yet: both sides take it
// as zero (the child's buffer starts zeroed), and it is allocated only when
// a chunk differs or the region becomes synced, so that a large
// registration whose post fails (too long, say) costs one scan.
func (r *rRegion) pushLocked(out []chunk) []chunk {
	if r.shadow == nil {
		if isZeroNoRace(r.buf) {
			return out
		}
		r.shadow = make([]byte, len(r.buf))
	}
	return diffNoRace(out, r.id, r.buf, r.shadow)
}

// rWindow is a memory window of a proxied adapter.
type rWindow struct {
	c   *Client
	a   *rAdapter
	id  uint64
	res *nd.Result

	status nd.Status // guarded by c.syncMu: res as the child last knew it
	bytes  int
}

var _ nd.MemoryWindow = (*rWindow)(nil)

func (w *rWindow) Close() error {
	_, err := w.c.do(noCancel, &frame{op: opWindowClose, obj: w.id}, nil, func(*frame, error) {
		delete(w.c.windows, w.id)
	})
	return err
}

// rCQ is a proxied completion queue.
type rCQ struct {
	c  *Client
	id uint64
}

var _ nd.CompletionQueue = (*rCQ)(nil)

func (q *rCQ) GetResults(results []*nd.Result) int {
	r, err := q.c.do(noCancel, &frame{op: opGetResults, obj: q.id, ints: i64(len(results))}, nil, nil)
	if err != nil {
		return 0
	}
	n := 0
	for i := 0; i+3 < len(r.ints) && n < len(results); i += 4 {
		res := q.c.takeResult(uint64(r.ints[i]))
		if res == nil {
			continue
		}
		res.Status, res.BytesTransferred, res.Cause = nd.Status(r.ints[i+1]), int(r.ints[i+2]), nd.Cause(r.ints[i+3])
		results[n] = res
		n++
	}
	return n
}

func (q *rCQ) Notify(ctx context.Context, typ nd.NotifyType) error {
	_, err := q.c.do(ctx, &frame{op: opNotify, obj: q.id, ints: i64(int(typ))}, nil, nil)
	return err
}

func (q *rCQ) Resize(entries int) error {
	_, err := q.c.do(noCancel, &frame{op: opResize, obj: q.id, ints: i64(entries)}, nil, nil)
	return err
}

func (q *rCQ) Close() error {
	_, err := q.c.do(noCancel, &frame{op: opCQClose, obj: q.id}, nil, nil)
	return err
}

// rConnector is a proxied connector.
type rConnector struct {
	c  *Client
	id uint64
}

var _ nd.Connector = (*rConnector)(nil)

func (k *rConnector) CreateEndpoint(inbound, outbound nd.CompletionQueue, l nd.EndpointLimits) (nd.Endpoint, error) {
	id := k.c.newID()
	f := &frame{op: opCreateEndpoint, obj: k.id, ints: []int64{int64(id), int64(k.c.cqRef(inbound)), int64(k.c.cqRef(outbound)),
		int64(l.InboundEntries), int64(l.OutboundEntries), int64(l.InboundSGE), int64(l.OutboundSGE),
		int64(l.InboundReadLimit), int64(l.OutboundReadLimit)}}
	r, err := k.c.do(noCancel, f, nil, nil)
	if err != nil {
		return nil, err
	}
	return &rEndpoint{c: k.c, id: id, inline: int(r.int(0))}, nil
}

func (k *rConnector) CreateEndpointWithSRQ(inbound, outbound nd.CompletionQueue, srq nd.SharedReceiveQueue, l nd.EndpointLimits) (nd.Endpoint, error) {
	id := k.c.newID()
	f := &frame{op: opCreateEndpointWithSRQ, obj: k.id, ints: []int64{int64(id), int64(k.c.cqRef(inbound)), int64(k.c.cqRef(outbound)),
		int64(l.InboundEntries), int64(l.OutboundEntries), int64(l.InboundSGE), int64(l.OutboundSGE),
		int64(l.InboundReadLimit), int64(l.OutboundReadLimit), int64(k.c.srqRef(srq))}}
	r, err := k.c.do(noCancel, f, nil, nil)
	if err != nil {
		return nil, err
	}
	return &rEndpoint{c: k.c, id: id, inline: int(r.int(0))}, nil
}

func (k *rConnector) Connect(ctx context.Context, ep nd.Endpoint, remote netip.AddrPort, protocol int, localPort uint16, privateData []byte) error {
	b, _ := remote.MarshalBinary()
	f := &frame{op: opConnect, obj: k.id, ints: []int64{int64(k.c.epRef(ep)), int64(protocol), int64(localPort)}, blobs: [][]byte{b, privateData}}
	_, err := k.c.do(ctx, f, nil, nil)
	return err
}

func (k *rConnector) CompleteConnect(ctx context.Context) error {
	_, err := k.c.do(ctx, &frame{op: opCompleteConnect, obj: k.id}, nil, nil)
	return err
}

func (k *rConnector) Accept(ctx context.Context, ep nd.Endpoint, privateData []byte) error {
	f := &frame{op: opAccept, obj: k.id, ints: []int64{int64(k.c.epRef(ep))}, blobs: [][]byte{privateData}}
	_, err := k.c.do(ctx, f, nil, nil)
	return err
}

func (k *rConnector) Reject(privateData []byte) error {
	_, err := k.c.do(noCancel, &frame{op: opReject, obj: k.id, blobs: [][]byte{privateData}}, nil, nil)
	return err
}

func (k *rConnector) GetConnectionData(privateData []byte) (nd.ConnectionData, error) {
	r, err := k.c.do(noCancel, &frame{op: opGetConnectionData, obj: k.id, blobs: [][]byte{privateData}}, nil, nil)
	copy(privateData, r.blob(0))
	return nd.ConnectionData{InboundReadLimit: int(r.int(0)), OutboundReadLimit: int(r.int(1)), PrivateDataLength: int(r.int(2))}, err
}

func (k *rConnector) addr(op uint8) (netip.AddrPort, error) {
	r, err := k.c.do(noCancel, &frame{op: op, obj: k.id}, nil, nil)
	var ap netip.AddrPort
	if b := r.blob(0); b != nil {
		if e := ap.UnmarshalBinary(b); e != nil && err == nil {
			err = &nd.OpError{Op: ops[op].name, Status: nd.ErrInternalError, Err: e}
		}
	}
	return ap, err
}

// DisconnectReason implements nd.DisconnectReasoner with the child's
// connector's reason (ErrNotSupported if its provider records none).
func (k *rConnector) DisconnectReason() error {
	r, err := k.c.do(noCancel, &frame{op: opDisconnectReason, obj: k.id}, nil, nil)
	if err != nil {
		return err
	}
	if r.int(0) == 0 {
		return nil
	}
	return &nd.DisconnectError{Peer: r.int(1) != 0, Status: nd.Status(r.int(2)), Cause: nd.Cause(r.int(3)), Op: string(r.blob(0)), Detail: string(r.blob(1))}
}

func (k *rConnector) GetLocalAddress() (netip.AddrPort, error) { return k.addr(opGetLocalAddress) }
func (k *rConnector) GetPeerAddress() (netip.AddrPort, error)  { return k.addr(opGetPeerAddress) }

func (k *rConnector) NotifyDisconnect(ctx context.Context) error {
	_, err := k.c.do(ctx, &frame{op: opNotifyDisconnect, obj: k.id}, nil, nil)
	return err
}

func (k *rConnector) Disconnect(ctx context.Context) error {
	_, err := k.c.do(ctx, &frame{op: opDisconnect, obj: k.id}, nil, nil)
	return err
}

func (k *rConnector) Close() error {
	_, err := k.c.do(noCancel, &frame{op: opConnectorClose, obj: k.id}, nil, nil)
	return err
}

// rListener is a proxied listener.
type rListener struct {
	c    *Client
	id   uint64
	port uint16
}

var _ nd.Listener = (*rListener)(nil)

func (l *rListener) GetConnectionRequest(ctx context.Context, conn nd.Connector) error {
	_, err := l.c.do(ctx, &frame{op: opGetConnectionRequest, obj: l.id, ints: []int64{int64(l.c.connRef(conn))}}, nil, nil)
	return err
}

func (l *rListener) Port() uint16 { return l.port }

func (l *rListener) Close() error {
	_, err := l.c.do(noCancel, &frame{op: opListenerClose, obj: l.id}, nil, nil)
	return err
}

// rEndpoint is a proxied endpoint.
type rEndpoint struct {
	c      *Client
	id     uint64
	inline int
}

var _ nd.Endpoint = (*rEndpoint)(nil)

// post runs a posting call: res is recorded under a fresh id before the
// request leaves, and forgotten again if the post fails at once.
func (e *rEndpoint) post(f *frame, res *nd.Result, named []*rRegion) (*frame, error) {
	rid := e.c.addResult(res)
	f.obj = e.id
	f.ints = append([]int64{int64(rid)}, f.ints...)
	r, err := e.c.do(noCancel, f, named, nil)
	if err != nil {
		e.c.dropResult(rid)
	}
	return r, err
}

func descInts(d nd.MWDescriptor) []int64 {
	return []int64{int64(d.Base), int64(d.Length), int64(d.Token)}
}

func (e *rEndpoint) Send(res *nd.Result, sgl []nd.SGE, flags nd.Flags) error {
	sges, named := e.c.sgl(sgl)
	_, err := e.post(&frame{op: opSend, ints: i64(int(flags)), sges: sges}, res, named)
	return err
}

func (e *rEndpoint) SendAndInvalidate(res *nd.Result, sgl []nd.SGE, remote nd.MWDescriptor, flags nd.Flags) error {
	sges, named := e.c.sgl(sgl)
	_, err := e.post(&frame{op: opSendAndInvalidate, ints: append(i64(int(flags)), descInts(remote)...), sges: sges}, res, named)
	return err
}

func (e *rEndpoint) Receive(res *nd.Result, sgl []nd.SGE) error {
	sges, named := e.c.sgl(sgl)
	_, err := e.post(&frame{op: opReceive, sges: sges}, res, named)
	return err
}

func (e *rEndpoint) Bind(res *nd.Result, mr nd.MemoryRegion, mw nd.MemoryWindow, buf []byte, flags nd.Flags) (nd.MWDescriptor, error) {
	sges, named := e.c.sgl([]nd.SGE{{Buffer: buf, Region: mr}})
	if mr == nil {
		// A nil region: the buffer itself still has to reach the child.
		sges = []wireSGE{{kind: sgeForeign, n: uint64(len(buf))}}
	}
	f := &frame{op: opBind, ints: []int64{int64(e.c.regionRef(mr)), int64(e.c.windowRef(mw)), int64(flags)}, sges: sges}
	r, err := e.post(f, res, named)
	if err != nil {
		return nd.MWDescriptor{}, err
	}
	return nd.MWDescriptor{Base: uint64(r.int(0)), Length: uint64(r.int(1)), Token: uint32(r.int(2))}, nil
}

func (e *rEndpoint) Invalidate(res *nd.Result, mw nd.MemoryWindow, flags nd.Flags) error {
	_, err := e.post(&frame{op: opInvalidate, ints: []int64{int64(e.c.windowRef(mw)), int64(flags)}}, res, nil)
	return err
}

func (e *rEndpoint) Read(res *nd.Result, sgl []nd.SGE, remote nd.MWDescriptor, offset uint64, flags nd.Flags) error {
	sges, named := e.c.sgl(sgl)
	_, err := e.post(&frame{op: opRead, ints: append(append(i64(int(flags)), descInts(remote)...), int64(offset)), sges: sges}, res, named)
	return err
}

func (e *rEndpoint) Write(res *nd.Result, sgl []nd.SGE, remote nd.MWDescriptor, offset uint64, flags nd.Flags) error {
	sges, named := e.c.sgl(sgl)
	_, err := e.post(&frame{op: opWrite, ints: append(append(i64(int(flags)), descInts(remote)...), int64(offset)), sges: sges}, res, named)
	return err
}

func (e *rEndpoint) Flush() error {
	_, err := e.c.do(noCancel, &frame{op: opFlush, obj: e.id}, nil, nil)
	return err
}

func (e *rEndpoint) StartRequestBatch() {
	e.c.do(noCancel, &frame{op: opStartBatch, obj: e.id}, nil, nil)
}

func (e *rEndpoint) SubmitRequestBatch() {
	e.c.do(noCancel, &frame{op: opSubmitBatch, obj: e.id}, nil, nil)
}

func (e *rEndpoint) MaxInlineData() int { return e.inline }

func (e *rEndpoint) Close() error {
	_, err := e.c.do(noCancel, &frame{op: opEndpointClose, obj: e.id}, nil, nil)
	return err
}

// sgl translates a scatter/gather list for the child, and returns the
// proxied regions it uses inside their bounds.
func (c *Client) sgl(sgl []nd.SGE) ([]wireSGE, []*rRegion) {
	if len(sgl) == 0 {
		return nil, nil
	}
	out := make([]wireSGE, len(sgl))
	var named []*rRegion
	for i, e := range sgl {
		n := uint64(len(e.Buffer))
		switch r := e.Region.(type) {
		case nil:
			out[i] = wireSGE{kind: sgeInline, n: n, data: e.Buffer}
		case *rRegion:
			if r.c != c {
				out[i] = wireSGE{kind: sgeForeign, n: n}
				break
			}
			if off, ok := within(r.buf, e.Buffer); ok {
				out[i] = wireSGE{kind: sgeRegion, region: r.id, off: off, n: n}
				named = append(named, r)
			} else {
				out[i] = wireSGE{kind: sgeOutside, region: r.id, n: n}
			}
		default:
			out[i] = wireSGE{kind: sgeForeign, n: n}
		}
	}
	return out, named
}

// The references of objects passed as arguments: a proxied object of this
// client by its id, nil as 0, anything else as foreign.

func (c *Client) regionRef(x nd.MemoryRegion) uint64 {
	switch v := x.(type) {
	case nil:
		return 0
	case *rRegion:
		if v.c == c {
			return v.id
		}
	}
	return refForeign
}

func (c *Client) windowRef(x nd.MemoryWindow) uint64 {
	switch v := x.(type) {
	case nil:
		return 0
	case *rWindow:
		if v.c == c {
			return v.id
		}
	}
	return refForeign
}

func (c *Client) cqRef(x nd.CompletionQueue) uint64 {
	switch v := x.(type) {
	case nil:
		return 0
	case *rCQ:
		if v.c == c {
			return v.id
		}
	}
	return refForeign
}

func (c *Client) epRef(x nd.Endpoint) uint64 {
	switch v := x.(type) {
	case nil:
		return 0
	case *rEndpoint:
		if v.c == c {
			return v.id
		}
	}
	return refForeign
}

func (c *Client) connRef(x nd.Connector) uint64 {
	switch v := x.(type) {
	case nil:
		return 0
	case *rConnector:
		if v.c == c {
			return v.id
		}
	}
	return refForeign
}
