package ndexport

import (
	"sync"
	"unsafe"

	"github.com/godirect/nd"
	"github.com/godirect/nd/internal/ndabi"
)

// Endpoint1 is ND v1's INDEndpoint. Posting converts the consumer's
// ND_SGE array into a scatter/gather list kept per direction (under a lock
// of its own), so that it allocates nothing.
type Endpoint1 struct {
	Base
	conn    *Connector1
	in, out *CQ1
	ep      nd.Endpoint

	sendMu  sync.Mutex
	sendSGL []nd.SGE
	recvMu  sync.Mutex
	recvSGL []nd.SGE
}

func (e *Endpoint1) released() {}
func (e *Endpoint1) finalize() {
	e.ep.Close()
	e.in.unhold()
	e.out.unhold()
	e.conn.dropEndpoint(e)
	e.conn.unhold()
}

// sgl converts the consumer's n entries at p into dst: an entry with a
// memory handle names that registration (unregistered{} if none), one
// without is inline. More entries than dst holds is ND_DATA_OVERRUN (the
// endpoint's limit); an entry longer than the adapter's maximum
// ND_BUFFER_OVERFLOW; one that cannot be memory ND_ACCESS_VIOLATION; a nil
// array with entries ND_INVALID_PARAMETER with index param.
func (e *Endpoint1) sgl(dst []nd.SGE, p *ndabi.SGE, n uintptr, maxLen int, param nd.Status) ([]nd.SGE, nd.Status) {
	switch {
	case n == 0:
		return dst[:0], nd.Success
	case n > uintptr(len(dst)):
		return nil, nd.ErrDataOverrun
	case p == nil:
		return nil, param
	}
	src := unsafe.Slice(p, n)
	ad := e.conn.ad
	for i := range src {
		s := &src[i]
		if s.Length > uintptr(maxLen) {
			return nil, nd.ErrBufferOverflow
		}
		buf, ok := consumerBytes(s.Addr, s.Length)
		if !ok {
			return nil, nd.ErrAccessViolation
		}
		dst[i].Buffer, dst[i].Region = buf, nil
		if s.MR != 0 {
			dst[i].Region = ad.region(s.MR)
		}
	}
	return dst[:n], nd.Success
}

// descriptor reads the consumer's 20-byte ND_MW_DESCRIPTOR at p, at the
// call (the consumer may reuse it at once).
func descriptor(p *[ndabi.MWDescriptorSize]byte) nd.MWDescriptor {
	var d nd.MWDescriptor
	d.UnmarshalBinary(p[:])
	return d
}

// Flush is INDEndpoint::Flush.
func (e *Endpoint1) Flush() nd.Status { return status(e.ep.Flush()) }

// StartRequestBatch is INDEndpoint::StartRequestBatch.
func (e *Endpoint1) StartRequestBatch() { e.ep.StartRequestBatch() }

// SubmitRequestBatch is INDEndpoint::SubmitRequestBatch.
func (e *Endpoint1) SubmitRequestBatch() { e.ep.SubmitRequestBatch() }

// Send is INDEndpoint::Send; res is the consumer's ND_RESULT.
func (e *Endpoint1) Send(res *nd.Result, p *ndabi.SGE, n uintptr, flags uint32) nd.Status {
	e.sendMu.Lock()
	defer e.sendMu.Unlock()
	sgl, st := e.sgl(e.sendSGL, p, n, e.conn.ad.info.MaxOutboundLength, nd.ErrInvalidParameter2)
	if st != nd.Success {
		return st
	}
	st = status(e.ep.Send(res, sgl, nd.Flags(flags)))
	clear(sgl)
	return st
}

// SendAndInvalidate is INDEndpoint::SendAndInvalidate.
func (e *Endpoint1) SendAndInvalidate(res *nd.Result, p *ndabi.SGE, n uintptr, remote *[ndabi.MWDescriptorSize]byte, flags uint32) nd.Status {
	if remote == nil {
		return nd.ErrInvalidParameter4
	}
	e.sendMu.Lock()
	defer e.sendMu.Unlock()
	sgl, st := e.sgl(e.sendSGL, p, n, e.conn.ad.info.MaxOutboundLength, nd.ErrInvalidParameter2)
	if st != nd.Success {
		return st
	}
	st = status(e.ep.SendAndInvalidate(res, sgl, descriptor(remote), nd.Flags(flags)))
	clear(sgl)
	return st
}

// Receive is INDEndpoint::Receive.
func (e *Endpoint1) Receive(res *nd.Result, p *ndabi.SGE, n uintptr) nd.Status {
	e.recvMu.Lock()
	defer e.recvMu.Unlock()
	sgl, st := e.sgl(e.recvSGL, p, n, e.conn.ad.info.MaxInboundLength, nd.ErrInvalidParameter2)
	if st != nd.Success {
		return st
	}
	st = status(e.ep.Receive(res, sgl))
	clear(sgl)
	return st
}

// Bind is INDEndpoint::Bind: mw bound to the consumer's n bytes at p,
// inside the registration of handle h; the descriptor is written to desc
// at once (ND_INVALID_PARAMETER_7 if desc is nil).
func (e *Endpoint1) Bind(res *nd.Result, h uintptr, mw *Window1, p unsafe.Pointer, n uintptr, flags uint32, desc *[ndabi.MWDescriptorSize]byte) nd.Status {
	if mw == nil {
		return nd.ErrInvalidParameter3
	}
	if desc == nil {
		return nd.ErrInvalidParameter7
	}
	buf, ok := consumerBytes(p, n)
	if !ok {
		return nd.ErrInvalidParameter4
	}
	d, err := e.ep.Bind(res, e.conn.ad.region(h), mw.mw, buf, nd.Flags(flags))
	if err != nil {
		return status(err)
	}
	d.Put(desc[:])
	return nd.Success
}

// Invalidate is INDEndpoint::Invalidate.
func (e *Endpoint1) Invalidate(res *nd.Result, mw *Window1, flags uint32) nd.Status {
	if mw == nil {
		return nd.ErrInvalidParameter2
	}
	return status(e.ep.Invalidate(res, mw.mw, nd.Flags(flags)))
}

// Read is INDEndpoint::Read.
func (e *Endpoint1) Read(res *nd.Result, p *ndabi.SGE, n uintptr, remote *[ndabi.MWDescriptorSize]byte, offset uint64, flags uint32) nd.Status {
	if remote == nil {
		return nd.ErrInvalidParameter4
	}
	e.sendMu.Lock()
	defer e.sendMu.Unlock()
	sgl, st := e.sgl(e.sendSGL, p, n, e.conn.ad.info.MaxOutboundLength, nd.ErrInvalidParameter2)
	if st != nd.Success {
		return st
	}
	st = status(e.ep.Read(res, sgl, descriptor(remote), offset, nd.Flags(flags)))
	clear(sgl)
	return st
}

// Write is INDEndpoint::Write.
func (e *Endpoint1) Write(res *nd.Result, p *ndabi.SGE, n uintptr, remote *[ndabi.MWDescriptorSize]byte, offset uint64, flags uint32) nd.Status {
	if remote == nil {
		return nd.ErrInvalidParameter4
	}
	e.sendMu.Lock()
	defer e.sendMu.Unlock()
	sgl, st := e.sgl(e.sendSGL, p, n, e.conn.ad.info.MaxOutboundLength, nd.ErrInvalidParameter2)
	if st != nd.Success {
		return st
	}
	st = status(e.ep.Write(res, sgl, descriptor(remote), offset, nd.Flags(flags)))
	clear(sgl)
	return st
}
