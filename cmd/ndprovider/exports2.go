//go:build windows && cgo

package main

import "C"

import (
	"unsafe"

	"github.com/godirect/nd"
	"github.com/godirect/nd/internal/ndabi"
	"github.com/godirect/nd/internal/ndexport"
)

// The methods of ND v2's interfaces: each finds its object and hands the
// consumer's arguments to internal/ndexport, which decides what the call
// does.

//export gdProvider2QueryAddressList
func gdProvider2QueryAddressList(this, list, n unsafe.Pointer) int32 {
	p, ok := self[*ndexport.Provider2](this)
	if !ok {
		return invalidHandle
	}
	return hr(p.QueryAddressList(list, (*uint32)(n)))
}

//export gdProvider2ResolveAddress
func gdProvider2ResolveAddress(this, addr unsafe.Pointer, n uint32, id unsafe.Pointer) int32 {
	p, ok := self[*ndexport.Provider2](this)
	if !ok {
		return invalidHandle
	}
	return hr(p.ResolveAddress(addr, uintptr(n), (*uint64)(id)))
}

//export gdProvider2OpenAdapter
func gdProvider2OpenAdapter(this, iid unsafe.Pointer, id uint64, pp unsafe.Pointer) int32 {
	p, ok := self[*ndexport.Provider2](this)
	if !ok {
		return invalidHandle
	}
	g, ok := guidAt(iid)
	if !ok {
		return hr(nd.ErrInvalidParameter1)
	}
	if pp == nil {
		return hr(nd.ErrInvalidParameter3)
	}
	a, st := p.OpenAdapter(g, id)
	return put(pp, a, kindAdapter2, st)
}

// adapter2 is the IND2Adapter behind this, and the interface id and out
// pointer of a Create method (with the out pointer's parameter index).
func created(this, iid, pp unsafe.Pointer, ppParam nd.Status) (*ndexport.Adapter2, ndabi.GUID, int32) {
	a, ok := self[*ndexport.Adapter2](this)
	if !ok {
		return nil, ndabi.GUID{}, invalidHandle
	}
	g, ok := guidAt(iid)
	if !ok {
		return nil, ndabi.GUID{}, hr(nd.ErrInvalidParameter1)
	}
	if pp == nil {
		return nil, ndabi.GUID{}, hr(ppParam)
	}
	return a, g, 0
}

//export gdAdapter2CreateOverlappedFile
func gdAdapter2CreateOverlappedFile(this, h unsafe.Pointer) int32 {
	a, ok := self[*ndexport.Adapter2](this)
	if !ok {
		return invalidHandle
	}
	return hr(a.CreateOverlappedFile((*uintptr)(h)))
}

//export gdAdapter2Query
func gdAdapter2Query(this, info, n unsafe.Pointer) int32 {
	a, ok := self[*ndexport.Adapter2](this)
	if !ok {
		return invalidHandle
	}
	return hr(a.Query(info, (*uint32)(n)))
}

//export gdAdapter2QueryAddressList
func gdAdapter2QueryAddressList(this, list, n unsafe.Pointer) int32 {
	a, ok := self[*ndexport.Adapter2](this)
	if !ok {
		return invalidHandle
	}
	return hr(a.QueryAddressList(list, (*uint32)(n)))
}

//export gdAdapter2CreateCompletionQueue
func gdAdapter2CreateCompletionQueue(this, iid unsafe.Pointer, h uintptr, depth uint32, group uint16, affinity uintptr, pp unsafe.Pointer) int32 {
	a, g, e := created(this, iid, pp, nd.ErrInvalidParameter6)
	if a == nil {
		return e
	}
	q, st := a.CreateCompletionQueue(g, h, depth)
	return put(pp, q, kindCQ2, st)
}

//export gdAdapter2CreateMemoryRegion
func gdAdapter2CreateMemoryRegion(this, iid unsafe.Pointer, h uintptr, pp unsafe.Pointer) int32 {
	a, g, e := created(this, iid, pp, nd.ErrInvalidParameter3)
	if a == nil {
		return e
	}
	r, st := a.CreateMemoryRegion(g, h)
	return put(pp, r, kindRegion2, st)
}

//export gdAdapter2CreateMemoryWindow
func gdAdapter2CreateMemoryWindow(this, iid, pp unsafe.Pointer) int32 {
	a, g, e := created(this, iid, pp, nd.ErrInvalidParameter2)
	if a == nil {
		return e
	}
	w, st := a.CreateMemoryWindow(g)
	return put(pp, w, kindWindow2, st)
}

//export gdAdapter2CreateSharedReceiveQueue
func gdAdapter2CreateSharedReceiveQueue(this, iid unsafe.Pointer, h uintptr, depth, maxSge, threshold uint32, group uint16, affinity uintptr, pp unsafe.Pointer) int32 {
	a, g, e := created(this, iid, pp, nd.ErrInvalidParameter8)
	if a == nil {
		return e
	}
	s, st := a.CreateSharedReceiveQueue(g, h, depth, maxSge, threshold)
	return put(pp, s, kindSRQ2, st)
}

//export gdAdapter2CreateQueuePair
func gdAdapter2CreateQueuePair(this, iid, rcq, icq unsafe.Pointer, context uintptr, rDepth, iDepth, rSGE, iSGE, inlineSize uint32, pp unsafe.Pointer) int32 {
	a, g, e := created(this, iid, pp, nd.ErrInvalidParameter10)
	if a == nil {
		return e
	}
	qp, st := a.CreateQueuePair(g, arg[*ndexport.CQ2](rcq), arg[*ndexport.CQ2](icq), context, rDepth, iDepth, rSGE, iSGE, inlineSize)
	return put(pp, qp, kindQueuePair2, st)
}

//export gdAdapter2CreateQueuePairWithSrq
func gdAdapter2CreateQueuePairWithSrq(this, iid, rcq, icq, srq unsafe.Pointer, context uintptr, iDepth, iSGE, inlineSize uint32, pp unsafe.Pointer) int32 {
	a, g, e := created(this, iid, pp, nd.ErrInvalidParameter9)
	if a == nil {
		return e
	}
	qp, st := a.CreateQueuePairWithSrq(g, arg[*ndexport.CQ2](rcq), arg[*ndexport.CQ2](icq), arg[*ndexport.SRQ2](srq), context, iDepth, iSGE, inlineSize)
	return put(pp, qp, kindQueuePair2, st)
}

//export gdAdapter2CreateConnector
func gdAdapter2CreateConnector(this, iid unsafe.Pointer, h uintptr, pp unsafe.Pointer) int32 {
	a, g, e := created(this, iid, pp, nd.ErrInvalidParameter3)
	if a == nil {
		return e
	}
	c, st := a.CreateConnector(g, h)
	return put(pp, c, kindConnector2, st)
}

//export gdAdapter2CreateListener
func gdAdapter2CreateListener(this, iid unsafe.Pointer, h uintptr, pp unsafe.Pointer) int32 {
	a, g, e := created(this, iid, pp, nd.ErrInvalidParameter3)
	if a == nil {
		return e
	}
	l, st := a.CreateListener(g, h)
	return put(pp, l, kindListener2, st)
}

//export gdCQ2Resize
func gdCQ2Resize(this unsafe.Pointer, depth uint32) int32 {
	q, ok := self[*ndexport.CQ2](this)
	if !ok {
		return invalidHandle
	}
	return hr(q.Resize(depth))
}

//export gdCQ2Notify
func gdCQ2Notify(this unsafe.Pointer, typ uint32, ov unsafe.Pointer) int32 {
	q, ok := self[*ndexport.CQ2](this)
	if !ok {
		return invalidHandle
	}
	return hr(q.Notify(typ, (*ndabi.Overlapped)(ov)))
}

//export gdCQ2GetResults
func gdCQ2GetResults(this, results unsafe.Pointer, n uint32) uint32 {
	q, ok := self[*ndexport.CQ2](this)
	if !ok || results == nil {
		return 0
	}
	return uint32(q.GetResults(unsafe.Slice((*ndabi.Result2)(results), min(n, 1<<16))))
}

//export gdSRQ2Modify
func gdSRQ2Modify(this unsafe.Pointer, depth, threshold uint32) int32 {
	s, ok := self[*ndexport.SRQ2](this)
	if !ok {
		return invalidHandle
	}
	return hr(s.Modify(depth, threshold))
}

//export gdSRQ2Notify
func gdSRQ2Notify(this, ov unsafe.Pointer) int32 {
	s, ok := self[*ndexport.SRQ2](this)
	if !ok {
		return invalidHandle
	}
	return hr(s.Notify((*ndabi.Overlapped)(ov)))
}

//export gdSRQ2Receive
func gdSRQ2Receive(this unsafe.Pointer, ctx uintptr, sge unsafe.Pointer, n uint32) int32 {
	s, ok := self[*ndexport.SRQ2](this)
	if !ok {
		return invalidHandle
	}
	return hr(s.Receive(ctx, (*ndabi.SGE2)(sge), n))
}

//export gdWindow2GetRemoteToken
func gdWindow2GetRemoteToken(this unsafe.Pointer) uint32 {
	w, ok := self[*ndexport.Window2](this)
	if !ok {
		return 0
	}
	return w.GetRemoteToken()
}

//export gdRegion2Register
func gdRegion2Register(this, buf unsafe.Pointer, n uintptr, flags uint32, ov unsafe.Pointer) int32 {
	r, ok := self[*ndexport.Region2](this)
	if !ok {
		return invalidHandle
	}
	return hr(r.Register(buf, n, flags, (*ndabi.Overlapped)(ov)))
}

//export gdRegion2Deregister
func gdRegion2Deregister(this, ov unsafe.Pointer) int32 {
	r, ok := self[*ndexport.Region2](this)
	if !ok {
		return invalidHandle
	}
	return hr(r.Deregister((*ndabi.Overlapped)(ov)))
}

//export gdRegion2GetLocalToken
func gdRegion2GetLocalToken(this unsafe.Pointer) uint32 {
	r, ok := self[*ndexport.Region2](this)
	if !ok {
		return 0
	}
	return r.GetLocalToken()
}

//export gdRegion2GetRemoteToken
func gdRegion2GetRemoteToken(this unsafe.Pointer) uint32 {
	r, ok := self[*ndexport.Region2](this)
	if !ok {
		return 0
	}
	return r.GetRemoteToken()
}

//export gdQueuePair2Flush
func gdQueuePair2Flush(this unsafe.Pointer) int32 {
	qp, ok := self[*ndexport.QueuePair2](this)
	if !ok {
		return invalidHandle
	}
	return hr(qp.Flush())
}

//export gdQueuePair2Send
func gdQueuePair2Send(this unsafe.Pointer, ctx uintptr, sge unsafe.Pointer, n, flags uint32) int32 {
	qp, ok := self[*ndexport.QueuePair2](this)
	if !ok {
		return invalidHandle
	}
	return hr(qp.Send(ctx, (*ndabi.SGE2)(sge), n, flags))
}

//export gdQueuePair2Receive
func gdQueuePair2Receive(this unsafe.Pointer, ctx uintptr, sge unsafe.Pointer, n uint32) int32 {
	qp, ok := self[*ndexport.QueuePair2](this)
	if !ok {
		return invalidHandle
	}
	return hr(qp.Receive(ctx, (*ndabi.SGE2)(sge), n))
}

//export gdQueuePair2Bind
func gdQueuePair2Bind(this unsafe.Pointer, ctx uintptr, mr, mw, buf unsafe.Pointer, n uintptr, flags uint32) int32 {
	qp, ok := self[*ndexport.QueuePair2](this)
	if !ok {
		return invalidHandle
	}
	return hr(qp.Bind(ctx, arg[*ndexport.Region2](mr), arg[*ndexport.Window2](mw), buf, n, flags))
}

//export gdQueuePair2Invalidate
func gdQueuePair2Invalidate(this unsafe.Pointer, ctx uintptr, mw unsafe.Pointer, flags uint32) int32 {
	qp, ok := self[*ndexport.QueuePair2](this)
	if !ok {
		return invalidHandle
	}
	return hr(qp.Invalidate(ctx, arg[*ndexport.Window2](mw), flags))
}

//export gdQueuePair2Read
func gdQueuePair2Read(this unsafe.Pointer, ctx uintptr, sge unsafe.Pointer, n uint32, addr uint64, token, flags uint32) int32 {
	qp, ok := self[*ndexport.QueuePair2](this)
	if !ok {
		return invalidHandle
	}
	return hr(qp.Read(ctx, (*ndabi.SGE2)(sge), n, addr, token, flags))
}

//export gdQueuePair2Write
func gdQueuePair2Write(this unsafe.Pointer, ctx uintptr, sge unsafe.Pointer, n uint32, addr uint64, token, flags uint32) int32 {
	qp, ok := self[*ndexport.QueuePair2](this)
	if !ok {
		return invalidHandle
	}
	return hr(qp.Write(ctx, (*ndabi.SGE2)(sge), n, addr, token, flags))
}

//export gdConnector2Bind
func gdConnector2Bind(this, addr unsafe.Pointer, n uint32) int32 {
	c, ok := self[*ndexport.Connector2](this)
	if !ok {
		return invalidHandle
	}
	return hr(c.Bind(addr, uintptr(n)))
}

//export gdConnector2Connect
func gdConnector2Connect(this, qp, dest unsafe.Pointer, n, ird, ord uint32, pd unsafe.Pointer, pdLen uint32, ov unsafe.Pointer) int32 {
	c, ok := self[*ndexport.Connector2](this)
	if !ok {
		return invalidHandle
	}
	return hr(c.Connect(arg[*ndexport.QueuePair2](qp), dest, uintptr(n), ird, ord, pd, uintptr(pdLen), (*ndabi.Overlapped)(ov)))
}

//export gdConnector2CompleteConnect
func gdConnector2CompleteConnect(this, ov unsafe.Pointer) int32 {
	c, ok := self[*ndexport.Connector2](this)
	if !ok {
		return invalidHandle
	}
	return hr(c.CompleteConnect((*ndabi.Overlapped)(ov)))
}

//export gdConnector2Accept
func gdConnector2Accept(this, qp unsafe.Pointer, ird, ord uint32, pd unsafe.Pointer, pdLen uint32, ov unsafe.Pointer) int32 {
	c, ok := self[*ndexport.Connector2](this)
	if !ok {
		return invalidHandle
	}
	return hr(c.Accept(arg[*ndexport.QueuePair2](qp), ird, ord, pd, uintptr(pdLen), (*ndabi.Overlapped)(ov)))
}

//export gdConnector2Reject
func gdConnector2Reject(this, pd unsafe.Pointer, pdLen uint32) int32 {
	c, ok := self[*ndexport.Connector2](this)
	if !ok {
		return invalidHandle
	}
	return hr(c.Reject(pd, uintptr(pdLen)))
}

//export gdConnector2GetReadLimits
func gdConnector2GetReadLimits(this, ird, ord unsafe.Pointer) int32 {
	c, ok := self[*ndexport.Connector2](this)
	if !ok {
		return invalidHandle
	}
	return hr(c.GetReadLimits((*uint32)(ird), (*uint32)(ord)))
}

//export gdConnector2GetPrivateData
func gdConnector2GetPrivateData(this, pd, n unsafe.Pointer) int32 {
	c, ok := self[*ndexport.Connector2](this)
	if !ok {
		return invalidHandle
	}
	return hr(c.GetPrivateData(pd, (*uint32)(n)))
}

//export gdConnector2GetLocalAddress
func gdConnector2GetLocalAddress(this, addr, n unsafe.Pointer) int32 {
	c, ok := self[*ndexport.Connector2](this)
	if !ok {
		return invalidHandle
	}
	return hr(c.GetLocalAddress(addr, (*uint32)(n)))
}

//export gdConnector2GetPeerAddress
func gdConnector2GetPeerAddress(this, addr, n unsafe.Pointer) int32 {
	c, ok := self[*ndexport.Connector2](this)
	if !ok {
		return invalidHandle
	}
	return hr(c.GetPeerAddress(addr, (*uint32)(n)))
}

//export gdConnector2NotifyDisconnect
func gdConnector2NotifyDisconnect(this, ov unsafe.Pointer) int32 {
	c, ok := self[*ndexport.Connector2](this)
	if !ok {
		return invalidHandle
	}
	return hr(c.NotifyDisconnect((*ndabi.Overlapped)(ov)))
}

//export gdConnector2Disconnect
func gdConnector2Disconnect(this, ov unsafe.Pointer) int32 {
	c, ok := self[*ndexport.Connector2](this)
	if !ok {
		return invalidHandle
	}
	return hr(c.Disconnect((*ndabi.Overlapped)(ov)))
}

//export gdListener2Bind
func gdListener2Bind(this, addr unsafe.Pointer, n uint32) int32 {
	l, ok := self[*ndexport.Listener2](this)
	if !ok {
		return invalidHandle
	}
	return hr(l.Bind(addr, uintptr(n)))
}

//export gdListener2Listen
func gdListener2Listen(this unsafe.Pointer, backlog uint32) int32 {
	l, ok := self[*ndexport.Listener2](this)
	if !ok {
		return invalidHandle
	}
	return hr(l.Listen(backlog))
}

//export gdListener2GetLocalAddress
func gdListener2GetLocalAddress(this, addr, n unsafe.Pointer) int32 {
	l, ok := self[*ndexport.Listener2](this)
	if !ok {
		return invalidHandle
	}
	return hr(l.GetLocalAddress(addr, (*uint32)(n)))
}

//export gdListener2GetConnectionRequest
func gdListener2GetConnectionRequest(this, conn, ov unsafe.Pointer) int32 {
	l, ok := self[*ndexport.Listener2](this)
	if !ok {
		return invalidHandle
	}
	return hr(l.GetConnectionRequest(arg[*ndexport.Connector2](conn), (*ndabi.Overlapped)(ov)))
}
