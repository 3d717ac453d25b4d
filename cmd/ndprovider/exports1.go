//go:build windows && cgo

package main

import "C"

import (
	"unsafe"

	"github.com/godirect/nd"
	"github.com/godirect/nd/internal/ndabi"
	"github.com/godirect/nd/internal/ndexport"
)

// The methods of ND v1's interfaces: each finds its object and hands the
// consumer's arguments to internal/ndexport, which decides what the call
// does.

//export gdProvider1QueryAddressList
func gdProvider1QueryAddressList(this, list, n unsafe.Pointer) int32 {
	p, ok := self[*ndexport.Provider1](this)
	if !ok {
		return invalidHandle
	}
	return hr(p.QueryAddressList(list, (*uintptr)(n)))
}

//export gdProvider1OpenAdapter
func gdProvider1OpenAdapter(this, addr unsafe.Pointer, n uintptr, pp unsafe.Pointer) int32 {
	p, ok := self[*ndexport.Provider1](this)
	if !ok {
		return invalidHandle
	}
	if pp == nil {
		return hr(nd.ErrInvalidParameter3)
	}
	a, st := p.OpenAdapter(addr, n)
	return put(pp, a, kindAdapter1, st)
}

//export gdAdapter1GetFileHandle
func gdAdapter1GetFileHandle(this unsafe.Pointer) uintptr {
	a, ok := self[*ndexport.Adapter1](this)
	if !ok {
		return ^uintptr(0) // INVALID_HANDLE_VALUE
	}
	return a.GetFileHandle()
}

//export gdAdapter1Query
func gdAdapter1Query(this unsafe.Pointer, version uint32, info, n unsafe.Pointer) int32 {
	a, ok := self[*ndexport.Adapter1](this)
	if !ok {
		return invalidHandle
	}
	return hr(a.Query(version, info, (*uintptr)(n)))
}

//export gdAdapter1Control
func gdAdapter1Control(this unsafe.Pointer, code uint32, in unsafe.Pointer, nIn uintptr, out unsafe.Pointer, nOut uintptr, returned, ov unsafe.Pointer) int32 {
	a, ok := self[*ndexport.Adapter1](this)
	if !ok {
		return invalidHandle
	}
	return hr(a.Control())
}

//export gdAdapter1CreateCompletionQueue
func gdAdapter1CreateCompletionQueue(this unsafe.Pointer, entries uintptr, pp unsafe.Pointer) int32 {
	a, ok := self[*ndexport.Adapter1](this)
	if !ok {
		return invalidHandle
	}
	if pp == nil {
		return hr(nd.ErrInvalidParameter2)
	}
	q, st := a.CreateCompletionQueue(entries)
	return put(pp, q, kindCQ1, st)
}

//export gdAdapter1RegisterMemory
func gdAdapter1RegisterMemory(this, buf unsafe.Pointer, n uintptr, ov, h unsafe.Pointer) int32 {
	a, ok := self[*ndexport.Adapter1](this)
	if !ok {
		return invalidHandle
	}
	if h == nil {
		return hr(nd.ErrInvalidParameter4)
	}
	mr, st := a.RegisterMemory(buf, n, (*ndabi.Overlapped)(ov))
	if st == nd.Pending {
		*(*uintptr)(h) = mr
	}
	return hr(st)
}

//export gdAdapter1DeregisterMemory
func gdAdapter1DeregisterMemory(this unsafe.Pointer, h uintptr, ov unsafe.Pointer) int32 {
	a, ok := self[*ndexport.Adapter1](this)
	if !ok {
		return invalidHandle
	}
	return hr(a.DeregisterMemory(h, (*ndabi.Overlapped)(ov)))
}

//export gdAdapter1CreateMemoryWindow
func gdAdapter1CreateMemoryWindow(this, res, pp unsafe.Pointer) int32 {
	a, ok := self[*ndexport.Adapter1](this)
	if !ok {
		return invalidHandle
	}
	if pp == nil {
		return hr(nd.ErrInvalidParameter2)
	}
	w, st := a.CreateMemoryWindow((*nd.Result)(res))
	return put(pp, w, kindWindow1, st)
}

//export gdAdapter1CreateConnector
func gdAdapter1CreateConnector(this, pp unsafe.Pointer) int32 {
	a, ok := self[*ndexport.Adapter1](this)
	if !ok {
		return invalidHandle
	}
	if pp == nil {
		return hr(nd.ErrInvalidParameter1)
	}
	c, st := a.CreateConnector()
	return put(pp, c, kindConnector1, st)
}

//export gdAdapter1Listen
func gdAdapter1Listen(this unsafe.Pointer, backlog uintptr, protocol int32, port uint16, assigned, pp unsafe.Pointer) int32 {
	a, ok := self[*ndexport.Adapter1](this)
	if !ok {
		return invalidHandle
	}
	if pp == nil {
		return hr(nd.ErrInvalidParameter5)
	}
	l, st := a.Listen(backlog, protocol, port, (*uint16)(assigned))
	return put(pp, l, kindListen1, st)
}

//export gdCQ1Resize
func gdCQ1Resize(this unsafe.Pointer, entries uintptr) int32 {
	q, ok := self[*ndexport.CQ1](this)
	if !ok {
		return invalidHandle
	}
	return hr(q.Resize(entries))
}

//export gdCQ1Notify
func gdCQ1Notify(this unsafe.Pointer, typ uint32, ov unsafe.Pointer) int32 {
	q, ok := self[*ndexport.CQ1](this)
	if !ok {
		return invalidHandle
	}
	return hr(q.Notify(typ, (*ndabi.Overlapped)(ov)))
}

//export gdCQ1GetResults
func gdCQ1GetResults(this, results unsafe.Pointer, n uintptr) uintptr {
	q, ok := self[*ndexport.CQ1](this)
	if !ok || results == nil {
		return 0
	}
	return uintptr(q.GetResults(unsafe.Slice((**nd.Result)(results), min(n, 1<<16))))
}

//export gdEndpoint1Flush
func gdEndpoint1Flush(this unsafe.Pointer) int32 {
	e, ok := self[*ndexport.Endpoint1](this)
	if !ok {
		return invalidHandle
	}
	return hr(e.Flush())
}

//export gdEndpoint1StartRequestBatch
func gdEndpoint1StartRequestBatch(this unsafe.Pointer) {
	if e, ok := self[*ndexport.Endpoint1](this); ok {
		e.StartRequestBatch()
	}
}

//export gdEndpoint1SubmitRequestBatch
func gdEndpoint1SubmitRequestBatch(this unsafe.Pointer) {
	if e, ok := self[*ndexport.Endpoint1](this); ok {
		e.SubmitRequestBatch()
	}
}

// descriptorAt is the consumer's ND_MW_DESCRIPTOR at p.
func descriptorAt(p unsafe.Pointer) *[ndabi.MWDescriptorSize]byte {
	return (*[ndabi.MWDescriptorSize]byte)(p)
}

//export gdEndpoint1Send
func gdEndpoint1Send(this, res, sgl unsafe.Pointer, n uintptr, flags uint32) int32 {
	e, ok := self[*ndexport.Endpoint1](this)
	if !ok {
		return invalidHandle
	}
	return hr(e.Send((*nd.Result)(res), (*ndabi.SGE)(sgl), n, flags))
}

//export gdEndpoint1SendAndInvalidate
func gdEndpoint1SendAndInvalidate(this, res, sgl unsafe.Pointer, n uintptr, desc unsafe.Pointer, flags uint32) int32 {
	e, ok := self[*ndexport.Endpoint1](this)
	if !ok {
		return invalidHandle
	}
	return hr(e.SendAndInvalidate((*nd.Result)(res), (*ndabi.SGE)(sgl), n, descriptorAt(desc), flags))
}

//export gdEndpoint1Receive
func gdEndpoint1Receive(this, res, sgl unsafe.Pointer, n uintptr) int32 {
	e, ok := self[*ndexport.Endpoint1](this)
	if !ok {
		return invalidHandle
	}
	return hr(e.Receive((*nd.Result)(res), (*ndabi.SGE)(sgl), n))
}

//export gdEndpoint1Bind
func gdEndpoint1Bind(this, res unsafe.Pointer, h uintptr, mw, buf unsafe.Pointer, n uintptr, flags uint32, desc unsafe.Pointer) int32 {
	e, ok := self[*ndexport.Endpoint1](this)
	if !ok {
		return invalidHandle
	}
	return hr(e.Bind((*nd.Result)(res), h, arg[*ndexport.Window1](mw), buf, n, flags, descriptorAt(desc)))
}

//export gdEndpoint1Invalidate
func gdEndpoint1Invalidate(this, res, mw unsafe.Pointer, flags uint32) int32 {
	e, ok := self[*ndexport.Endpoint1](this)
	if !ok {
		return invalidHandle
	}
	return hr(e.Invalidate((*nd.Result)(res), arg[*ndexport.Window1](mw), flags))
}

//export gdEndpoint1Read
func gdEndpoint1Read(this, res, sgl unsafe.Pointer, n uintptr, desc unsafe.Pointer, offset uint64, flags uint32) int32 {
	e, ok := self[*ndexport.Endpoint1](this)
	if !ok {
		return invalidHandle
	}
	return hr(e.Read((*nd.Result)(res), (*ndabi.SGE)(sgl), n, descriptorAt(desc), offset, flags))
}

//export gdEndpoint1Write
func gdEndpoint1Write(this, res, sgl unsafe.Pointer, n uintptr, desc unsafe.Pointer, offset uint64, flags uint32) int32 {
	e, ok := self[*ndexport.Endpoint1](this)
	if !ok {
		return invalidHandle
	}
	return hr(e.Write((*nd.Result)(res), (*ndabi.SGE)(sgl), n, descriptorAt(desc), offset, flags))
}

//export gdConnector1CreateEndpoint
func gdConnector1CreateEndpoint(this, in, out unsafe.Pointer, inEntries, outEntries, inSGE, outSGE, ird, ord uintptr, maxInline, pp unsafe.Pointer) int32 {
	c, ok := self[*ndexport.Connector1](this)
	if !ok {
		return invalidHandle
	}
	if pp == nil {
		return hr(nd.ErrInvalidParameter10)
	}
	e, st := c.CreateEndpoint(arg[*ndexport.CQ1](in), arg[*ndexport.CQ1](out), inEntries, outEntries, inSGE, outSGE, ird, ord, (*uintptr)(maxInline))
	return put(pp, e, kindEndpoint1, st)
}

//export gdConnector1Connect
func gdConnector1Connect(this, ep, addr unsafe.Pointer, n uintptr, protocol int32, localPort uint16, pd unsafe.Pointer, pdLen uintptr, ov unsafe.Pointer) int32 {
	c, ok := self[*ndexport.Connector1](this)
	if !ok {
		return invalidHandle
	}
	return hr(c.Connect(arg[*ndexport.Endpoint1](ep), addr, n, protocol, localPort, pd, pdLen, (*ndabi.Overlapped)(ov)))
}

//export gdConnector1CompleteConnect
func gdConnector1CompleteConnect(this, ov unsafe.Pointer) int32 {
	c, ok := self[*ndexport.Connector1](this)
	if !ok {
		return invalidHandle
	}
	return hr(c.CompleteConnect((*ndabi.Overlapped)(ov)))
}

//export gdConnector1Accept
func gdConnector1Accept(this, ep, pd unsafe.Pointer, pdLen uintptr, ov unsafe.Pointer) int32 {
	c, ok := self[*ndexport.Connector1](this)
	if !ok {
		return invalidHandle
	}
	return hr(c.Accept(arg[*ndexport.Endpoint1](ep), pd, pdLen, (*ndabi.Overlapped)(ov)))
}

//export gdConnector1Reject
func gdConnector1Reject(this, pd unsafe.Pointer, pdLen uintptr) int32 {
	c, ok := self[*ndexport.Connector1](this)
	if !ok {
		return invalidHandle
	}
	return hr(c.Reject(pd, pdLen))
}

//export gdConnector1GetConnectionData
func gdConnector1GetConnectionData(this, ird, ord, pd, pdLen unsafe.Pointer) int32 {
	c, ok := self[*ndexport.Connector1](this)
	if !ok {
		return invalidHandle
	}
	return hr(c.GetConnectionData((*uintptr)(ird), (*uintptr)(ord), pd, (*uintptr)(pdLen)))
}

//export gdConnector1GetLocalAddress
func gdConnector1GetLocalAddress(this, addr, n unsafe.Pointer) int32 {
	c, ok := self[*ndexport.Connector1](this)
	if !ok {
		return invalidHandle
	}
	return hr(c.GetLocalAddress(addr, (*uintptr)(n)))
}

//export gdConnector1GetPeerAddress
func gdConnector1GetPeerAddress(this, addr, n unsafe.Pointer) int32 {
	c, ok := self[*ndexport.Connector1](this)
	if !ok {
		return invalidHandle
	}
	return hr(c.GetPeerAddress(addr, (*uintptr)(n)))
}

//export gdConnector1NotifyDisconnect
func gdConnector1NotifyDisconnect(this, ov unsafe.Pointer) int32 {
	c, ok := self[*ndexport.Connector1](this)
	if !ok {
		return invalidHandle
	}
	return hr(c.NotifyDisconnect((*ndabi.Overlapped)(ov)))
}

//export gdConnector1Disconnect
func gdConnector1Disconnect(this, ov unsafe.Pointer) int32 {
	c, ok := self[*ndexport.Connector1](this)
	if !ok {
		return invalidHandle
	}
	return hr(c.Disconnect((*ndabi.Overlapped)(ov)))
}

//export gdListen1GetConnectionRequest
func gdListen1GetConnectionRequest(this, conn, ov unsafe.Pointer) int32 {
	l, ok := self[*ndexport.Listen1](this)
	if !ok {
		return invalidHandle
	}
	return hr(l.GetConnectionRequest(arg[*ndexport.Connector1](conn), (*ndabi.Overlapped)(ov)))
}
