package ndexport

import (
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/godirect/nd"
	"github.com/godirect/nd/internal/engine"
	"github.com/godirect/nd/internal/ndabi"
)

// QueuePair2 is ND v2's IND2QueuePair: an endpoint on a connector of its
// own (ND v2 connects a queue pair through whichever connector the consumer
// names; that connector's calls go to this one), with a ring of request
// slots per direction.
type QueuePair2 struct {
	Base
	ad       *Adapter2
	rcq, icq *CQ2
	srq      *SRQ2
	context  uintptr
	conn     *engine.Connector
	ep       *engine.Endpoint
	// connRefs counts the queue pair and the IND2Connectors whose calls go
	// to conn (Connector2.carry): the last to go closes conn, so that a
	// connector still answers for its connection (its private data, its
	// end) after the consumer released the queue pair.
	connRefs atomic.Int32

	sendMu  sync.Mutex
	sendSGL []nd.SGE
	out     *ring
	recvMu  sync.Mutex
	recvSGL []nd.SGE
	in      *ring
}

// v2Param maps the parameter positions of nd's CreateEndpoint (ND v1's) to
// those of ND v2's CreateQueuePair.
func v2Param(st nd.Status, withSRQ bool) nd.Status {
	if !withSRQ {
		switch st {
		case nd.ErrInvalidParameter1:
			return nd.ErrInvalidParameter2
		case nd.ErrInvalidParameter2:
			return nd.ErrInvalidParameter3
		case nd.ErrInvalidParameter3:
			return nd.ErrInvalidParameter5
		case nd.ErrInvalidParameter4:
			return nd.ErrInvalidParameter6
		case nd.ErrInvalidParameter5:
			return nd.ErrInvalidParameter7
		case nd.ErrInvalidParameter6:
			return nd.ErrInvalidParameter8
		}
		return st
	}
	switch st {
	case nd.ErrInvalidParameter1:
		return nd.ErrInvalidParameter2
	case nd.ErrInvalidParameter2:
		return nd.ErrInvalidParameter3
	case nd.ErrInvalidParameter3:
		return nd.ErrInvalidParameter4
	case nd.ErrInvalidParameter4:
		return nd.ErrInvalidParameter6
	case nd.ErrInvalidParameter6:
		return nd.ErrInvalidParameter7
	}
	return st
}

// CreateQueuePair is IND2Adapter::CreateQueuePair: rcq and icq are the
// receive and initiator completion queues (nil when the consumer's pointer
// is not one of this package's: ND_INVALID_PARAMETER_2 or 3); limits beyond
// the adapter's are ND_INVALID_PARAMETER_5 to 9 by position. Its endpoint
// offers the adapter's read limits until Connect or Accept names others.
func (ad *Adapter2) CreateQueuePair(iid ndabi.GUID, rcq, icq *CQ2, context uintptr, rDepth, iDepth, rSGE, iSGE, inline uint32) (*QueuePair2, nd.Status) {
	return ad.createQueuePair(iid, rcq, icq, nil, context, rDepth, iDepth, rSGE, iSGE, inline)
}

// CreateQueuePairWithSrq is IND2Adapter::CreateQueuePairWithSrq: its
// Receives are srq's (nil: ND_INVALID_PARAMETER_4).
func (ad *Adapter2) CreateQueuePairWithSrq(iid ndabi.GUID, rcq, icq *CQ2, srq *SRQ2, context uintptr, iDepth, iSGE, inline uint32) (*QueuePair2, nd.Status) {
	if srq == nil || srq.ad != ad {
		if iid != ndabi.IIDIND2QueuePair {
			return nil, nd.Status(ndabi.E_NOINTERFACE)
		}
		return nil, nd.ErrInvalidParameter4
	}
	return ad.createQueuePair(iid, rcq, icq, srq, context, 0, iDepth, 0, iSGE, inline)
}

func (ad *Adapter2) createQueuePair(iid ndabi.GUID, rcq, icq *CQ2, srq *SRQ2, context uintptr, rDepth, iDepth, rSGE, iSGE, inline uint32) (*QueuePair2, nd.Status) {
	if _, st := ad.created(iid, ndabi.IIDIND2QueuePair, 0, 0); st != nd.Success {
		return nil, st
	}
	withSRQ := srq != nil
	switch {
	case rcq == nil || rcq.ad != ad:
		return nil, nd.ErrInvalidParameter2
	case icq == nil || icq.ad != ad:
		return nil, nd.ErrInvalidParameter3
	case uint64(inline) > uint64(ad.info.MaxInlineData) && !withSRQ:
		return nil, nd.ErrInvalidParameter9
	case uint64(inline) > uint64(ad.info.MaxInlineData):
		return nil, nd.ErrInvalidParameter8
	}
	u := func(n uint32) int { return int(min(uint64(n), 1<<31)) }
	lim := nd.EndpointLimits{
		InboundEntries: u(rDepth), OutboundEntries: u(iDepth), InboundSGE: u(rSGE), OutboundSGE: u(iSGE),
		InboundReadLimit: ad.info.MaxInboundReadLimit, OutboundReadLimit: ad.info.MaxOutboundReadLimit,
	}
	c, err := ad.a.CreateConnector()
	if err != nil {
		return nil, status(err)
	}
	var ep nd.Endpoint
	if withSRQ {
		ep, err = nd.CreateEndpointWithSRQ(c, rcq.cq, icq.cq, srq.srq, lim)
	} else {
		ep, err = c.CreateEndpoint(rcq.cq, icq.cq, lim)
	}
	if err != nil {
		c.Close()
		return nil, v2Param(status(err), withSRQ)
	}
	qp := &QueuePair2{
		ad: ad, rcq: rcq, icq: icq, srq: srq, context: context,
		conn: c.(*engine.Connector), ep: ep.(*engine.Endpoint),
		sendSGL: make([]nd.SGE, lim.OutboundSGE), out: newRing(lim.OutboundEntries),
	}
	if withSRQ {
		qp.ep.OnSharedReceive(func(res *nd.Result) { requestOf(res).qp = qp })
	} else {
		qp.recvSGL, qp.in = make([]nd.SGE, lim.InboundSGE), newRing(lim.InboundEntries)
	}
	qp.connRefs.Store(1)
	qp.init(qp)
	ad.hold()
	rcq.hold()
	icq.hold()
	if withSRQ {
		srq.hold()
	}
	return qp, nd.Success
}

func (qp *QueuePair2) released() {}

// holdConn adds a user of the queue pair's connector.
func (qp *QueuePair2) holdConn() { qp.connRefs.Add(1) }

// releaseConn drops a user of the queue pair's connector; the last closes
// it.
func (qp *QueuePair2) releaseConn() {
	if qp.connRefs.Add(-1) == 0 {
		qp.conn.Close()
	}
}

func (qp *QueuePair2) finalize() {
	qp.ep.Close() // the connection ends; its requests complete ND_CANCELED
	qp.releaseConn()
	qp.rcq.unhold()
	qp.icq.unhold()
	if qp.srq != nil {
		qp.srq.unhold()
	}
	qp.ad.unhold()
}

// Flush is IND2QueuePair::Flush.
func (qp *QueuePair2) Flush() nd.Status { return status(qp.ep.Flush()) }

// The flags each request takes (else ND_INVALID_PARAMETER_n at the flags'
// position).
const (
	sendFlags  = uint32(nd.FlagSilentSuccess|nd.FlagReadFence|nd.FlagSendAndSolicitEvent) | ndabi.OpFlagInline
	bindFlags  = uint32(nd.FlagSilentSuccess | nd.FlagReadFence | nd.FlagAllowRead | nd.FlagAllowWrite)
	readFlags  = uint32(nd.FlagSilentSuccess | nd.FlagReadFence)
	writeFlags = readFlags | ndabi.OpFlagInline
)

// post posts an outbound request of type typ: slot and scatter/gather list
// under the initiator lock, then post with them.
func (qp *QueuePair2) post(ctx uintptr, typ uint32, p *ndabi.SGE2, n uint32, inline bool, call func(res *nd.Result, sgl []nd.SGE) error) nd.Status {
	qp.sendMu.Lock()
	defer qp.sendMu.Unlock()
	r := qp.out.reserve()
	if r == nil {
		return nd.ErrNoMoreEntries
	}
	sgl, st := sgl2(qp.ad, qp.sendSGL, p, n, qp.ad.info.MaxOutboundLength, inline)
	if st != nd.Success {
		return st
	}
	r.res, r.ctx, r.qp, r.typ = nd.Result{}, ctx, qp, typ
	st = status(call(&r.res, sgl))
	clear(sgl)
	if st == nd.Success {
		qp.out.commit()
	}
	return st
}

// Send is IND2QueuePair::Send.
func (qp *QueuePair2) Send(ctx uintptr, p *ndabi.SGE2, n uint32, flags uint32) nd.Status {
	if flags&^sendFlags != 0 {
		return nd.ErrInvalidParameter4
	}
	return qp.post(ctx, ndabi.RequestSend, p, n, flags&ndabi.OpFlagInline != 0, func(res *nd.Result, sgl []nd.SGE) error {
		return qp.ep.Send(res, sgl, nd.Flags(flags&^ndabi.OpFlagInline))
	})
}

// Receive is IND2QueuePair::Receive (ND_INVALID_DEVICE_REQUEST on a queue
// pair with a shared receive queue: post there).
func (qp *QueuePair2) Receive(ctx uintptr, p *ndabi.SGE2, n uint32) nd.Status {
	if qp.in == nil {
		return nd.ErrInvalidDeviceRequest
	}
	qp.recvMu.Lock()
	defer qp.recvMu.Unlock()
	r := qp.in.reserve()
	if r == nil {
		return nd.ErrNoMoreEntries
	}
	sgl, st := sgl2(qp.ad, qp.recvSGL, p, n, qp.ad.info.MaxInboundLength, false)
	if st != nd.Success {
		return st
	}
	r.res, r.ctx, r.qp, r.typ = nd.Result{}, ctx, qp, ndabi.RequestReceive
	st = status(qp.ep.Receive(&r.res, sgl))
	clear(sgl)
	if st == nd.Success {
		qp.in.commit()
	}
	return st
}

// Bind is IND2QueuePair::Bind: mw bound to the consumer's n bytes at p
// inside mr's registration; mw's remote token is valid when it returns.
// Write access needs a region registered with ND_MR_FLAG_ALLOW_LOCAL_WRITE
// (ND_ACCESS_VIOLATION otherwise).
func (qp *QueuePair2) Bind(ctx uintptr, mr *Region2, mw *Window2, p unsafe.Pointer, n uintptr, flags uint32) nd.Status {
	switch {
	case mr == nil:
		return nd.ErrInvalidParameter2
	case mw == nil:
		return nd.ErrInvalidParameter3
	case flags&^bindFlags != 0:
		return nd.ErrInvalidParameter6
	}
	region, mrFlags := mr.region()
	if region == nil {
		return nd.ErrInvalidParameter2
	}
	if flags&uint32(nd.FlagAllowWrite) != 0 && mrFlags&ndabi.MRFlagAllowLocalWrite == 0 {
		return nd.ErrAccessViolation
	}
	buf, ok := consumerBytes(p, n)
	if !ok {
		return nd.ErrInvalidParameter4
	}
	qp.sendMu.Lock()
	defer qp.sendMu.Unlock()
	r := qp.out.reserve()
	if r == nil {
		return nd.ErrNoMoreEntries
	}
	r.res, r.ctx, r.qp, r.typ = nd.Result{}, ctx, qp, ndabi.RequestBind
	d, err := qp.ep.Bind(&r.res, region, mw.mw, buf, nd.Flags(flags))
	if err != nil {
		return status(err)
	}
	qp.out.commit()
	mw.token.Store(d.Token)
	return nd.Success
}

// Invalidate is IND2QueuePair::Invalidate.
func (qp *QueuePair2) Invalidate(ctx uintptr, mw *Window2, flags uint32) nd.Status {
	switch {
	case mw == nil:
		return nd.ErrInvalidParameter2
	case flags&^readFlags != 0:
		return nd.ErrInvalidParameter3
	}
	return qp.post(ctx, ndabi.RequestInvalidate, nil, 0, false, func(res *nd.Result, _ []nd.SGE) error {
		return qp.ep.Invalidate(res, mw.mw, nd.Flags(flags))
	})
}

// remote is the descriptor of ND v2's remote address and token for a
// request of sgl's length: the address is where it starts.
func remote(addr uint64, token uint32, sgl []nd.SGE) nd.MWDescriptor {
	var n uint64
	for _, e := range sgl {
		n += uint64(len(e.Buffer))
	}
	return nd.MWDescriptor{Base: addr, Length: n, Token: token}
}

// Read is IND2QueuePair::Read: from the peer's memory at remoteAddress
// under remoteToken (a window's or a region's).
func (qp *QueuePair2) Read(ctx uintptr, p *ndabi.SGE2, n uint32, addr uint64, token uint32, flags uint32) nd.Status {
	if flags&^readFlags != 0 {
		return nd.ErrInvalidParameter6
	}
	return qp.post(ctx, ndabi.RequestRead, p, n, false, func(res *nd.Result, sgl []nd.SGE) error {
		return qp.ep.Read(res, sgl, remote(addr, token, sgl), 0, nd.Flags(flags))
	})
}

// Write is IND2QueuePair::Write.
func (qp *QueuePair2) Write(ctx uintptr, p *ndabi.SGE2, n uint32, addr uint64, token uint32, flags uint32) nd.Status {
	if flags&^writeFlags != 0 {
		return nd.ErrInvalidParameter6
	}
	return qp.post(ctx, ndabi.RequestWrite, p, n, flags&ndabi.OpFlagInline != 0, func(res *nd.Result, sgl []nd.SGE) error {
		return qp.ep.Write(res, sgl, remote(addr, token, sgl), 0, nd.Flags(flags&^ndabi.OpFlagInline))
	})
}
