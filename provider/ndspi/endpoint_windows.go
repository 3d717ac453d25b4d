//go:build windows && (amd64 || arm64)

package ndspi

import (
	"encoding/binary"
	"math"
	"sync"
	"sync/atomic"

	"github.com/godirect/nd"
	"github.com/godirect/nd/internal/ndabi"
	"github.com/godirect/nd/internal/ndrules"
)

// endpoint is an nd.Endpoint: an ND v1 INDEndpoint, or an ND v2
// IND2QueuePair that its connector connects. Each direction has a lock, a
// pool of request slots (slots.go) and memory outside the Go heap for the
// scatter/gather array the provider reads during a post (the outbound one
// with room for inline bytes and a v1 window descriptor); ND v1's
// ND_RESULTs are one per slot, in memory of their own, each with the word
// that names its slot beside it. Posting allocates nothing. Its methods
// are safe for concurrent use.
type endpoint struct {
	a       *adapter
	c       *connector
	obj     com
	in, out *cq
	srq     *srq
	limits  nd.EndpointLimits
	inline  int

	id uint32 // its table id: ND v2's QueuePairContext, ND v1's tags
	qs queues

	sendMu  sync.Mutex
	sendMem cmem
	recvMu  sync.Mutex
	recvMem cmem
	resMem  cmem // ND v1: ND_RESULT records, inbound slots then outbound

	closed atomic.Bool // set with both locks held
	// connected: its connector's CompleteConnect or Accept succeeded (ND
	// v2's SendAndInvalidate, which ND v2 lacks, answers
	// ErrConnectionInvalid before, as every post but Receive does).
	connected atomic.Bool
	retired   bool // under a.mu: its memory and table id are given back
}

var _ nd.Endpoint = (*endpoint)(nil)

// Sizes of the memory the provider reads.
const (
	sge1Size     = 24 // ND_SGE
	sge2Size     = 16 // ND2_SGE
	v1Record     = 24 // ND_RESULT, then its tag
	v1TagOffset  = 16
	descSize     = 24 // the v1 ND_MW_DESCRIPTOR (20 bytes), aligned
	v2InlineFlag = ndabi.OpFlagInline
)

// setup allocates the endpoint's slots and memory for its limits, inline
// size and shared receive queue, and names it in the adapter's table
// unless it has its id already (ND v2 names it before CreateQueuePair,
// whose context the id is).
func (e *endpoint) setup() error {
	a, limits := e.a, e.limits
	sgeSize := sge2Size
	if a.v1 {
		sgeSize = sge1Size
	}
	var err error
	if e.sendMem, err = allocC(max(limits.OutboundSGE, 1)*sgeSize + e.inline + descSize); err != nil {
		return err
	}
	if e.recvMem, err = allocC(max(limits.InboundSGE, 1) * sgeSize); err != nil {
		e.freeMem()
		return err
	}
	if a.v1 {
		if e.resMem, err = allocC((limits.InboundEntries + limits.OutboundEntries) * v1Record); err != nil {
			e.freeMem()
			return err
		}
	}
	e.qs.out = newPool(limits.OutboundEntries, e)
	if e.srq == nil {
		e.qs.in = newPool(limits.InboundEntries, e)
	}
	if e.id == 0 {
		id, ok := a.slots.add(&e.qs)
		if !ok {
			e.freeMem()
			return nd.ErrInsufficientResources
		}
		e.id = id
	}
	if a.v1 {
		for i := range limits.InboundEntries {
			e.resMem.setWord(i*v1Record+v1TagOffset, v1Tag(e.id, uint32(i), true))
		}
		for i := range limits.OutboundEntries {
			e.resMem.setWord((limits.InboundEntries+i)*v1Record+v1TagOffset, v1Tag(e.id, uint32(i), false))
		}
	}
	return nil
}

func (e *endpoint) freeMem() {
	e.sendMem.free()
	e.recvMem.free()
	e.resMem.free()
}

// result1 is the address of the ND v1 ND_RESULT of slot (inbound or not).
func (e *endpoint) result1(slot uint32, inbound bool) uintptr {
	i := int(slot)
	if !inbound {
		i += e.limits.InboundEntries
	}
	return e.resMem.ptr(i * v1Record)
}

// attach records the endpoint with its connector, queues and shared
// receive queue, unless one of them closed meanwhile (false).
func (e *endpoint) attach() bool {
	a := e.a
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed.Load() || e.c.closed.Load() || e.in.closed.Load() || e.out.closed.Load() || e.srq != nil && e.srq.closed.Load() {
		return false
	}
	e.c.ep = e
	e.in.eps[e] = struct{}{}
	e.out.eps[e] = struct{}{}
	if e.srq != nil {
		e.srq.eps[e] = struct{}{}
	}
	return true
}

// status is the status of a call on the closed endpoint.
func (e *endpoint) status() nd.Status { return e.a.status(true) }

// dead reports whether the endpoint, or an object it depends on (its
// adapter, connector, completion queues, shared receive queue), closed:
// a call after a Close returned is refused even while another Close of the
// same object is still closing what depends on it.
func (e *endpoint) dead() bool {
	return e.closed.Load() || e.a.closed.Load() || e.c.closed.Load() || e.in.closed.Load() || e.out.closed.Load() ||
		e.srq != nil && e.srq.closed.Load()
}

// putSGE1 writes ND_SGE i of mem: the bytes at addr, n long, under memory
// handle h (0: inline).
func putSGE1(mem cmem, i int, addr uintptr, n int, h uint64) {
	b := mem.bytes()[i*sge1Size:]
	binary.LittleEndian.PutUint64(b, uint64(addr))
	binary.LittleEndian.PutUint64(b[8:], uint64(n))
	binary.LittleEndian.PutUint64(b[16:], h)
}

// putSGE2 writes ND2_SGE i of mem: the bytes at addr, n long, under local
// token t.
func putSGE2(mem cmem, i int, addr uintptr, n int, t uint64) {
	b := mem.bytes()[i*sge2Size:]
	binary.LittleEndian.PutUint64(b, uint64(addr))
	binary.LittleEndian.PutUint32(b[8:], uint32(min(n, math.MaxUint32)))
	binary.LittleEndian.PutUint32(b[12:], uint32(t))
}

// sgl writes sgl into mem's scatter/gather array for a post and returns
// whether it holds inline bytes, whether an entry names no live
// registration of the adapter (bad), and whether an entry with a live
// registration lies outside its bytes (outside: the provider refuses it
// against the registration's range). An entry with a live region of the adapter
// names that region's handle or token; an entry without a region is inline
// where inline is allowed (its bytes are copied into the outbound memory
// at staging, right after the array, since the caller may reuse them at
// once), and elsewhere, like an entry whose region is not a live
// registration of the adapter, points past the poison registration (the
// provider then fails the request with ND_ACCESS_VIOLATION). ND v2 posts
// a request with inline bytes with ND_OP_FLAG_INLINE, which copies every
// entry's bytes at the post without looking at tokens: a request with a
// bad entry is posted without it, its inline entries naming the poison
// registration too, so that the provider fails it.
func (e *endpoint) sgl(mem cmem, sgl []nd.SGE, allowInline bool) (inline, bad, outside bool) {
	a := e.a
	staging := len(sgl)
	if a.v1 {
		staging *= sge1Size
	} else {
		staging *= sge2Size
	}
	if !a.v1 {
		for i := range sgl {
			if r := sgl[i].Region; r != nil || !allowInline {
				if _, ok := a.regionOf(r); !ok {
					bad = true
				}
			}
		}
	}
	for i := range sgl {
		buf := sgl[i].Buffer
		addr, h := bytesAddr(buf), uint64(0)
		switch {
		case sgl[i].Region == nil && allowInline:
			inline = true
			copy(mem.bytes()[staging:], buf)
			addr = mem.ptr(staging)
			staging += len(buf)
			if bad && !a.v1 {
				h = a.poison.handle
			}
		default:
			var ok bool
			if h, ok = a.regionOf(sgl[i].Region); !ok {
				addr, bad = a.poison.addr(), true
			} else if r := sgl[i].Region.(*region); !inside(buf, r.buf) {
				outside = true
			}
		}
		if a.v1 {
			putSGE1(mem, i, addr, len(buf), h)
		} else {
			putSGE2(mem, i, addr, len(buf), h)
		}
	}
	return inline, bad, outside
}

// outLimits are the limits ndrules.Post holds an outbound list to here:
// the endpoint's SGE count and inline size (what its memory holds); the
// length is the provider's to check.
func (e *endpoint) outLimits() ndrules.PostLimits {
	return ndrules.PostLimits{MaxSGE: e.limits.OutboundSGE, MaxLength: math.MaxInt, MaxInline: e.inline}
}

// postOut posts an outbound request with an scatter/gather list: Send,
// SendAndInvalidate, Read, Write. remote is the window of Read, Write and
// SendAndInvalidate.
func (e *endpoint) postOut(kind ndrules.Outbound, res *nd.Result, sgl []nd.SGE, remote nd.MWDescriptor, offset uint64, flags nd.Flags) error {
	e.sendMu.Lock()
	defer e.sendMu.Unlock()
	if e.dead() {
		return e.status()
	}
	total, st := ndrules.Post(kind, res, sgl, flags, e.outLimits())
	if st != nd.Success {
		return st
	}
	silent := flags&nd.FlagSilentSuccess != 0
	// The list is written before the slot is taken (sendMu keeps
	// sendMem), so that the slot knows whose refusal an access violation
	// of a Read or Write would be.
	inline, bad, outside := e.sgl(e.sendMem, sgl, kind != ndrules.Read)
	remoteAccess := !bad && !outside && (kind == ndrules.Read || kind == ndrules.Write)
	slot, ok := e.qs.out.take(res, total, silent, remoteAccess)
	if !ok {
		return nd.ErrNoMoreEntries
	}
	if silent {
		e.out.silent.Add(1)
	}
	f := uintptr(flags &^ nd.FlagSilentSuccess)
	n := uintptr(len(sgl))
	mem := e.sendMem.addr
	if e.a.v1 {
		res1 := e.result1(slot, false)
		desc := e.sendMem.ptr(e.sendMem.n - descSize)
		switch kind {
		case ndrules.Send:
			st = e.obj.call(ndabi.INDEndpointSend, res1, mem, n, f)
		case ndrules.SendAndInvalidate:
			remote.Put(e.sendMem.bytes()[e.sendMem.n-descSize:])
			st = e.obj.call(ndabi.INDEndpointSendAndInvalidate, res1, mem, n, desc, f)
		case ndrules.Read:
			remote.Put(e.sendMem.bytes()[e.sendMem.n-descSize:])
			st = e.obj.call(ndabi.INDEndpointRead, res1, mem, n, desc, uintptr(offset), f)
		case ndrules.Write:
			remote.Put(e.sendMem.bytes()[e.sendMem.n-descSize:])
			st = e.obj.call(ndabi.INDEndpointWrite, res1, mem, n, desc, uintptr(offset), f)
		}
	} else {
		if inline && !bad {
			f |= uintptr(v2InlineFlag)
		}
		ctx := uintptr(requestContext(slot))
		switch kind {
		case ndrules.Send:
			st = e.obj.call(ndabi.IND2QueuePairSend, ctx, mem, n, f)
		case ndrules.Read:
			st = rwParam(e.obj.call(ndabi.IND2QueuePairRead, ctx, mem, n, uintptr(remote.Base+offset), uintptr(remote.Token), f))
		case ndrules.Write:
			st = rwParam(e.obj.call(ndabi.IND2QueuePairWrite, ctx, mem, n, uintptr(remote.Base+offset), uintptr(remote.Token), f))
		}
	}
	if st != nd.Success {
		e.qs.out.untake(slot)
		if silent {
			e.out.silent.Add(-1)
		}
		return st
	}
	return nil
}

// Send implements nd.Endpoint: ND's Send. Entries without a region are
// inline (ND v1: a NULL memory handle; ND v2: ND_OP_FLAG_INLINE, which then
// copies every entry's bytes at the post).
func (e *endpoint) Send(res *nd.Result, sgl []nd.SGE, flags nd.Flags) error {
	return e.postOut(ndrules.Send, res, sgl, nd.MWDescriptor{}, 0, flags)
}

// SendAndInvalidate implements nd.Endpoint: ND v1's SendAndInvalidate.
// ND v2 has none: ErrNotSupported, and nothing is queued.
func (e *endpoint) SendAndInvalidate(res *nd.Result, sgl []nd.SGE, remote nd.MWDescriptor, flags nd.Flags) error {
	if !e.a.v1 {
		if e.dead() {
			return e.status()
		}
		if _, st := ndrules.Post(ndrules.SendAndInvalidate, res, sgl, flags, e.outLimits()); st != nd.Success {
			return st
		}
		if !e.connected.Load() {
			return nd.ErrConnectionInvalid
		}
		return nd.ErrNotSupported
	}
	return e.postOut(ndrules.SendAndInvalidate, res, sgl, remote, 0, flags)
}

// Read implements nd.Endpoint: ND v1's Read with the 20-byte descriptor
// and offset; ND v2's Read at remote.Base+offset with remote.Token (ND v2
// carries no length: the provider holds the access to the window it
// names).
func (e *endpoint) Read(res *nd.Result, sgl []nd.SGE, remote nd.MWDescriptor, offset uint64, flags nd.Flags) error {
	return e.postOut(ndrules.Read, res, sgl, remote, offset, flags)
}

// Write implements nd.Endpoint, as Read does.
func (e *endpoint) Write(res *nd.Result, sgl []nd.SGE, remote nd.MWDescriptor, offset uint64, flags nd.Flags) error {
	return e.postOut(ndrules.Write, res, sgl, remote, offset, flags)
}

// Receive implements nd.Endpoint: ND's Receive. On an endpoint of a
// shared receive queue it is ErrInvalidDeviceRequest: post there.
func (e *endpoint) Receive(res *nd.Result, sgl []nd.SGE) error {
	e.recvMu.Lock()
	defer e.recvMu.Unlock()
	if e.dead() {
		return e.status()
	}
	if e.qs.in == nil {
		return nd.ErrInvalidDeviceRequest
	}
	total, st := ndrules.Receive(res, sgl, ndrules.PostLimits{MaxSGE: e.limits.InboundSGE, MaxLength: math.MaxInt})
	if st != nd.Success {
		return st
	}
	slot, ok := e.qs.in.take(res, total, false, false)
	if !ok {
		return nd.ErrNoMoreEntries
	}
	e.sgl(e.recvMem, sgl, false)
	if e.a.v1 {
		st = e.obj.call(ndabi.INDEndpointReceive, e.result1(slot, true), e.recvMem.addr, uintptr(len(sgl)))
	} else {
		st = e.obj.call(ndabi.IND2QueuePairReceive, uintptr(requestContext(slot)), e.recvMem.addr, uintptr(len(sgl)))
	}
	if st != nd.Success {
		e.qs.in.untake(slot)
		return st
	}
	return nil
}

// Bind implements nd.Endpoint: ND's Bind of mw to buf inside mr. ND v1
// writes the descriptor; for ND v2 it is the buffer's address and length
// and the window's remote token, valid once Bind returns (what ND v2's
// Read and Write take).
func (e *endpoint) Bind(res *nd.Result, mr nd.MemoryRegion, mw nd.MemoryWindow, buf []byte, flags nd.Flags) (nd.MWDescriptor, error) {
	e.sendMu.Lock()
	defer e.sendMu.Unlock()
	if e.dead() {
		return nd.MWDescriptor{}, e.status()
	}
	a := e.a
	h, regionOK := a.regionOf(mr)
	w, windowOK := a.useWindow(mw)
	if windowOK {
		defer w.done()
	}
	in := false
	var r *region
	if regionOK {
		r = mr.(*region)
		in = inside(buf, r.buf)
	}
	if st := ndrules.Bind(res, regionOK, windowOK, in, flags); st != nd.Success {
		return nd.MWDescriptor{}, st
	}
	silent := flags&nd.FlagSilentSuccess != 0
	slot, ok := e.qs.out.take(res, 0, silent, false)
	if !ok {
		return nd.MWDescriptor{}, nd.ErrNoMoreEntries
	}
	if silent {
		e.out.silent.Add(1)
	}
	f := uintptr(flags &^ nd.FlagSilentSuccess)
	var st nd.Status
	var d nd.MWDescriptor
	if a.v1 {
		descAt := e.sendMem.n - descSize
		st = e.obj.call(ndabi.INDEndpointBind, e.result1(slot, false), uintptr(h), uintptr(w.obj), bytesAddr(buf), uintptr(len(buf)), f, e.sendMem.ptr(descAt))
		if st == nd.Success {
			d.UnmarshalBinary(e.sendMem.bytes()[descAt : descAt+ndabi.MWDescriptorSize])
		}
	} else {
		st = bindParam(e.obj.call(ndabi.IND2QueuePairBind, uintptr(requestContext(slot)), uintptr(r.mr), uintptr(w.obj), bytesAddr(buf), uintptr(len(buf)), f))
		if st == nd.Success {
			d = nd.MWDescriptor{Base: uint64(bytesAddr(buf)), Length: uint64(len(buf)), Token: uint32(w.obj.raw(ndabi.IND2MemoryWindowGetRemoteToken))}
		}
	}
	if st != nd.Success {
		e.qs.out.untake(slot)
		if silent {
			e.out.silent.Add(-1)
		}
		return nd.MWDescriptor{}, st
	}
	return d, nil
}

// Invalidate implements nd.Endpoint: ND's Invalidate.
func (e *endpoint) Invalidate(res *nd.Result, mw nd.MemoryWindow, flags nd.Flags) error {
	e.sendMu.Lock()
	defer e.sendMu.Unlock()
	if e.dead() {
		return e.status()
	}
	w, windowOK := e.a.useWindow(mw)
	if windowOK {
		defer w.done()
	}
	if st := ndrules.Invalidate(res, windowOK, flags); st != nd.Success {
		return st
	}
	silent := flags&nd.FlagSilentSuccess != 0
	slot, ok := e.qs.out.take(res, 0, silent, false)
	if !ok {
		return nd.ErrNoMoreEntries
	}
	if silent {
		e.out.silent.Add(1)
	}
	f := uintptr(flags &^ nd.FlagSilentSuccess)
	var st nd.Status
	if e.a.v1 {
		st = e.obj.call(ndabi.INDEndpointInvalidate, e.result1(slot, false), uintptr(w.obj), f)
	} else {
		st = e.obj.call(ndabi.IND2QueuePairInvalidate, uintptr(requestContext(slot)), uintptr(w.obj), f)
	}
	if st != nd.Success {
		e.qs.out.untake(slot)
		if silent {
			e.out.silent.Add(-1)
		}
		return st
	}
	return nil
}

// Flush implements nd.Endpoint: ND's Flush.
func (e *endpoint) Flush() error {
	e.sendMu.Lock()
	defer e.sendMu.Unlock()
	if e.dead() {
		return e.status()
	}
	if e.a.v1 {
		return e.obj.call(ndabi.INDEndpointFlush).Err()
	}
	return e.obj.call(ndabi.IND2QueuePairFlush).Err()
}

// StartRequestBatch implements nd.Endpoint: ND v1's; ND v2 has none.
func (e *endpoint) StartRequestBatch() {
	if e.a.v1 {
		e.sendMu.Lock()
		if !e.dead() {
			e.obj.call(ndabi.INDEndpointStartRequestBatch)
		}
		e.sendMu.Unlock()
	}
}

// SubmitRequestBatch implements nd.Endpoint: ND v1's; ND v2 has none.
func (e *endpoint) SubmitRequestBatch() {
	if e.a.v1 {
		e.sendMu.Lock()
		if !e.dead() {
			e.obj.call(ndabi.INDEndpointSubmitRequestBatch)
		}
		e.sendMu.Unlock()
	}
}

// MaxInlineData implements nd.Endpoint: what ND v1's CreateEndpoint
// granted; for ND v2, the inline size CreateQueuePair asked for (the
// adapter's MaxInlineDataSize; ND v2 grants at least what it is asked).
func (e *endpoint) MaxInlineData() int { return e.inline }

// Close implements nd.Endpoint: the endpoint's requests are flushed
// (ND's Flush: they complete ErrCanceled into its queues) and its object
// released, which ends a connection still up. Its slots and memory are
// given back once every request's completion was reaped.
func (e *endpoint) Close() error {
	e.sendMu.Lock()
	e.recvMu.Lock()
	if e.closed.Load() {
		e.recvMu.Unlock()
		e.sendMu.Unlock()
		return nil
	}
	e.closed.Store(true)
	if e.a.v1 {
		e.obj.call(ndabi.INDEndpointFlush)
	} else {
		e.obj.call(ndabi.IND2QueuePairFlush)
	}
	e.obj.release()
	e.recvMu.Unlock()
	e.sendMu.Unlock()
	a := e.a
	a.mu.Lock()
	if e.c.ep == e {
		e.c.ep = nil
	}
	a.mu.Unlock()
	e.retireIfDrained()
	return nil
}

// reaped implements reaper: a closed endpoint goes once drained.
func (e *endpoint) reaped() {
	if e.closed.Load() {
		e.retireIfDrained()
	}
}

// retireIfDrained gives the endpoint's table id and memory back once it is
// closed and no request of it is held, and leaves its queues' sets.
func (e *endpoint) retireIfDrained() {
	if e.qs.out.held() > 0 || e.qs.in != nil && e.qs.in.held() > 0 {
		return
	}
	a := e.a
	a.mu.Lock()
	if e.retired {
		a.mu.Unlock()
		return
	}
	e.retired = true
	delete(e.in.eps, e)
	delete(e.out.eps, e)
	if e.srq != nil {
		delete(e.srq.eps, e)
	}
	a.mu.Unlock()
	a.slots.remove(e.id)
	e.freeMem()
}
