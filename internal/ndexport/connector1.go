package ndexport

import (
	"context"
	"sync"
	"unsafe"

	"github.com/godirect/nd"
	"github.com/godirect/nd/internal/ndabi"
)

// Connector1 is ND v1's INDConnector. Its endpoint holds it: the nd
// connector closes when both the consumer's references and the endpoint
// are gone; the consumer's last reference already ends a connection that
// is up, as ND asks.
type Connector1 struct {
	Base
	ad *Adapter1
	c  nd.Connector

	mu sync.Mutex
	ep *Endpoint1 // the endpoint made through it, until it is finalized
}

func (cn *Connector1) released() {
	go cn.c.Disconnect(context.Background()) // ErrConnectionInvalid if not connected
}

func (cn *Connector1) finalize() {
	cn.c.Close()
	cn.ad.unhold()
}

func (cn *Connector1) dropEndpoint(e *Endpoint1) {
	cn.mu.Lock()
	if cn.ep == e {
		cn.ep = nil
	}
	cn.mu.Unlock()
}

// timeoutV1 is what ND v1 consumers expect of a connection attempt that
// timed out: the success-class ND_TIMEOUT, on which they try again (ND v2
// says ND_IO_TIMEOUT).
func timeoutV1(st nd.Status) nd.Status {
	if st == nd.ErrIOTimeout {
		return nd.Timeout
	}
	return st
}

// CreateEndpoint is INDConnector::CreateEndpoint: in and out are the
// completion queues (nil when the consumer's pointer is not one of this
// package's INDCompletionQueues: ND_INVALID_PARAMETER_1 or 2), the six
// limits follow in ND's order, and the inline size granted goes to
// *maxInline when it is not nil.
func (cn *Connector1) CreateEndpoint(in, out *CQ1, inEntries, outEntries, inSGE, outSGE, ird, ord uintptr, maxInline *uintptr) (*Endpoint1, nd.Status) {
	switch {
	case in == nil || in.ad != cn.ad:
		return nil, nd.ErrInvalidParameter1
	case out == nil || out.ad != cn.ad:
		return nil, nd.ErrInvalidParameter2
	}
	lim := nd.EndpointLimits{
		InboundEntries: size(inEntries), OutboundEntries: size(outEntries),
		InboundSGE: size(inSGE), OutboundSGE: size(outSGE),
		InboundReadLimit: size(ird), OutboundReadLimit: size(ord),
	}
	ep, err := cn.c.CreateEndpoint(in.cq, out.cq, lim)
	if err != nil {
		return nil, status(err)
	}
	e := &Endpoint1{conn: cn, in: in, out: out, ep: ep,
		sendSGL: make([]nd.SGE, lim.OutboundSGE), recvSGL: make([]nd.SGE, lim.InboundSGE)}
	e.init(e)
	cn.mu.Lock()
	cn.ep = e
	cn.mu.Unlock()
	cn.hold()
	in.hold()
	out.hold()
	if maxInline != nil {
		*maxInline = uintptr(ep.MaxInlineData())
	}
	return e, nd.Success
}

// Connect is INDConnector::Connect: ep must be this connector's endpoint
// (ND_INVALID_PARAMETER_1), addr the peer's sockaddr of n bytes (its port
// the listener's), localPort in network byte order (0: any), the private
// data pdLen bytes at pd.
func (cn *Connector1) Connect(ep *Endpoint1, addr unsafe.Pointer, n uintptr, protocol int32, localPort uint16, pd unsafe.Pointer, pdLen uintptr, ov *ndabi.Overlapped) nd.Status {
	if ep == nil || ep.conn != cn {
		return nd.ErrInvalidParameter1
	}
	remote, st := parseSockaddr(addr, n)
	if st != nd.Success {
		return st
	}
	data, st := copyIn(pd, pdLen, cn.ad.info.MaxCallerData)
	if st != nd.Success {
		return st
	}
	if ov == nil {
		return nd.ErrInvalidParameter8
	}
	return cn.start(cn.ad.file, ov, nd.ErrInvalidParameter8, func(ctx context.Context) nd.Status {
		return timeoutV1(status(cn.c.Connect(ctx, ep.ep, remote, int(protocol), ntohs(localPort), data)))
	})
}

// CompleteConnect is INDConnector::CompleteConnect.
func (cn *Connector1) CompleteConnect(ov *ndabi.Overlapped) nd.Status {
	return cn.overlapped(ov, nd.ErrInvalidParameter1, func(ctx context.Context) error { return cn.c.CompleteConnect(ctx) })
}

// overlapped starts a request of cn that runs call; param is the status of
// a nil ov.
func (cn *Connector1) overlapped(ov *ndabi.Overlapped, param nd.Status, call func(ctx context.Context) error) nd.Status {
	if ov == nil {
		return param
	}
	return cn.start(cn.ad.file, ov, param, func(ctx context.Context) nd.Status { return status(call(ctx)) })
}

// Accept is INDConnector::Accept.
func (cn *Connector1) Accept(ep *Endpoint1, pd unsafe.Pointer, pdLen uintptr, ov *ndabi.Overlapped) nd.Status {
	if ep == nil || ep.conn != cn {
		return nd.ErrInvalidParameter1
	}
	data, st := copyIn(pd, pdLen, cn.ad.info.MaxCalleeData)
	if st != nd.Success {
		return st
	}
	if ov == nil {
		return nd.ErrInvalidParameter4
	}
	return cn.start(cn.ad.file, ov, nd.ErrInvalidParameter4, func(ctx context.Context) nd.Status {
		return timeoutV1(status(cn.c.Accept(ctx, ep.ep, data)))
	})
}

// Reject is INDConnector::Reject.
func (cn *Connector1) Reject(pd unsafe.Pointer, pdLen uintptr) nd.Status {
	data, st := copyIn(pd, pdLen, cn.ad.info.MaxCalleeData)
	if st != nd.Success {
		return st
	}
	return status(cn.c.Reject(data))
}

// GetConnectionData is INDConnector::GetConnectionData: the read limits
// (each optional) and the peer's private data into the consumer's buffer
// of *pdLen bytes at pd, with ND's size protocol (a nil pdLen skips it).
func (cn *Connector1) GetConnectionData(ird, ord *uintptr, pd unsafe.Pointer, pdLen *uintptr) nd.Status {
	return connectionData(cn.c, ird, ord, pd, pdLen)
}

// connectionData is GetConnectionData of ND v1 and the private data and
// read limits of ND v2's GetPrivateData and GetReadLimits.
func connectionData[N sizeProtocol](c nd.Connector, ird, ord *N, pd unsafe.Pointer, pdLen *N) nd.Status {
	var buf []byte
	if pdLen != nil && pd != nil {
		b, ok := consumerBytes(pd, min(uintptr(*pdLen), 1<<16))
		if !ok {
			return nd.ErrAccessViolation
		}
		buf = b
	}
	cd, err := c.GetConnectionData(buf)
	st := status(err)
	if st != nd.Success && st != nd.ErrBufferOverflow {
		return st
	}
	if ird != nil {
		*ird = N(cd.InboundReadLimit)
	}
	if ord != nil {
		*ord = N(cd.OutboundReadLimit)
	}
	if pdLen == nil {
		return nd.Success
	}
	*pdLen = N(cd.PrivateDataLength)
	return st
}

// GetLocalAddress is INDConnector::GetLocalAddress.
func (cn *Connector1) GetLocalAddress(addr unsafe.Pointer, n *uintptr) nd.Status {
	ap, err := cn.c.GetLocalAddress()
	if err != nil {
		return status(err)
	}
	return putSockaddr(ap, addr, n)
}

// GetPeerAddress is INDConnector::GetPeerAddress (on the passive side from
// GetConnectionRequest on).
func (cn *Connector1) GetPeerAddress(addr unsafe.Pointer, n *uintptr) nd.Status {
	ap, err := cn.c.GetPeerAddress()
	if err != nil {
		return status(err)
	}
	return putSockaddr(ap, addr, n)
}

// NotifyDisconnect is INDConnector::NotifyDisconnect.
func (cn *Connector1) NotifyDisconnect(ov *ndabi.Overlapped) nd.Status {
	return cn.overlapped(ov, nd.ErrInvalidParameter1, func(ctx context.Context) error { return cn.c.NotifyDisconnect(ctx) })
}

// Disconnect is INDConnector::Disconnect.
func (cn *Connector1) Disconnect(ov *ndabi.Overlapped) nd.Status {
	return cn.overlapped(ov, nd.ErrInvalidParameter1, func(ctx context.Context) error { return cn.c.Disconnect(ctx) })
}

// Listen1 is ND v1's INDListen.
type Listen1 struct {
	Base
	ad *Adapter1
	l  nd.Listener
}

func (ls *Listen1) released() {}
func (ls *Listen1) finalize() {
	ls.l.Close()
	ls.ad.unhold()
}

// GetConnectionRequest is INDListen::GetConnectionRequest: the next
// request is bound to c (nil when the consumer's pointer is not one of
// this package's INDConnectors: ND_INVALID_PARAMETER_1).
func (ls *Listen1) GetConnectionRequest(c *Connector1, ov *ndabi.Overlapped) nd.Status {
	if c == nil || c.ad != ls.ad {
		return nd.ErrInvalidParameter1
	}
	if ov == nil {
		return nd.ErrInvalidParameter2
	}
	return ls.startInOrder(ls.ad.file, ov, nd.ErrInvalidParameter2, queueConnectionRequest(ls.l, c.c))
}
