//go:build verbs && linux

package verbs

// This file and post.go are the only ones that call C. The helpers are in
// nd_verbs.h; none of them keeps a Go pointer after it returns, and the
// memory rdma-core keeps (registered buffers) is pinned with runtime.Pinner.

/*
#cgo LDFLAGS: -libverbs -lrdmacm
#include <stdlib.h>
#include "nd_verbs.h"
*/
import "C"

import (
	"net/netip"
	"syscall"
	"unsafe"

	"github.com/godirect/nd"
)

type (
	cContext = *C.struct_ibv_context
	cPD      = *C.struct_ibv_pd
	cCQ      = *C.struct_ibv_cq
	cChan    = *C.struct_ibv_comp_channel
	cQP      = *C.struct_ibv_qp
	cSRQ     = *C.struct_ibv_srq
	cMR      = *C.struct_ibv_mr
	cID      = *C.struct_rdma_cm_id
	cEvCh    = *C.struct_rdma_event_channel
	cEv      = *C.struct_nd_ev
)

// rdma_cm event types.
const (
	evAddrResolved    = C.RDMA_CM_EVENT_ADDR_RESOLVED
	evAddrError       = C.RDMA_CM_EVENT_ADDR_ERROR
	evRouteResolved   = C.RDMA_CM_EVENT_ROUTE_RESOLVED
	evRouteError      = C.RDMA_CM_EVENT_ROUTE_ERROR
	evConnectRequest  = C.RDMA_CM_EVENT_CONNECT_REQUEST
	evConnectResponse = C.RDMA_CM_EVENT_CONNECT_RESPONSE
	evConnectError    = C.RDMA_CM_EVENT_CONNECT_ERROR
	evUnreachable     = C.RDMA_CM_EVENT_UNREACHABLE
	evRejected        = C.RDMA_CM_EVENT_REJECTED
	evEstablished     = C.RDMA_CM_EVENT_ESTABLISHED
	evDisconnected    = C.RDMA_CM_EVENT_DISCONNECTED
	evDeviceRemoval   = C.RDMA_CM_EVENT_DEVICE_REMOVAL
	evTimewaitExit    = C.RDMA_CM_EVENT_TIMEWAIT_EXIT
)

// QP states for qpModify.
const (
	qpsInit = C.IBV_QPS_INIT
	qpsRTR  = C.IBV_QPS_RTR
	qpsRTS  = C.IBV_QPS_RTS
)

func ip4(a netip.Addr) C.uint32_t {
	b := a.As4()
	return C.uint32_t(uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3]))
}

func fromIP4(v C.uint32_t, port C.uint16_t) netip.AddrPort {
	u := uint32(v)
	return netip.AddrPortFrom(netip.AddrFrom4([4]byte{byte(u >> 24), byte(u >> 16), byte(u >> 8), byte(u)}), uint16(port))
}

// probe reports the device context and port that serve addr, if any.
func probe(addr netip.Addr) (cContext, int, error) {
	var ctx cContext
	var port C.int
	if rc := C.nd_probe(ip4(addr), &ctx, &port); rc != 0 {
		return nil, 0, syscall.Errno(rc)
	}
	return ctx, int(port), nil
}

// devInfo is what Query needs from the device and port attributes.
type devInfo struct {
	name                      string
	iwarp                     bool
	vendor, part              uint32
	maxQPWR, maxSGE, maxSGERd int
	maxCQE                    int
	maxMR                     uint64
	maxRdAtom, maxInitRdAtom  int
	maxMsg                    uint32
	mw                        bool
	maxInline                 int
	maxSRQ, maxSRQWR          int // 0 when the device has no shared receive queues
	maxSRQSGE                 int
}

func queryDevice(ctx cContext, port int) (devInfo, error) {
	var da C.struct_ibv_device_attr
	var pa C.struct_ibv_port_attr
	if rc := C.nd_query(ctx, C.int(port), &da, &pa); rc != 0 {
		return devInfo{}, syscall.Errno(-rc)
	}
	d := devInfo{
		name: C.GoString(C.nd_dev_name(ctx)), iwarp: C.nd_is_iwarp(ctx) != 0,
		vendor: uint32(da.vendor_id), part: uint32(da.vendor_part_id),
		maxQPWR: int(da.max_qp_wr), maxSGE: int(da.max_sge), maxSGERd: int(da.max_sge_rd),
		maxCQE: int(da.max_cqe), maxMR: uint64(da.max_mr_size),
		maxRdAtom: int(da.max_qp_rd_atom), maxInitRdAtom: int(da.max_qp_init_rd_atom),
		maxMsg: uint32(pa.max_msg_sz), mw: da.max_mw > 0,
		maxSRQ: int(da.max_srq), maxSRQWR: int(da.max_srq_wr), maxSRQSGE: int(da.max_srq_sge),
	}
	if d.maxSGERd <= 0 {
		d.maxSGERd = d.maxSGE
	}
	return d, nil
}

func allocPD(ctx cContext) (cPD, error) {
	pd, err := C.ibv_alloc_pd(ctx)
	if pd == nil {
		return nil, errnoOr(err, syscall.ENOMEM)
	}
	return pd, nil
}

func deallocPD(pd cPD) { C.ibv_dealloc_pd(pd) }

// creationErr is the error of a creation that failed with errno e: 0 says
// the device's library failed without setting errno.
func creationErr(e C.int) error {
	if e == 0 {
		return errLibrarySilent
	}
	return syscall.Errno(e)
}

func errnoOr(err error, def syscall.Errno) error {
	if err != nil {
		return err
	}
	return def
}

// probeInline finds the largest inline size (of a few candidates) a QP of
// this device grants.
func probeInline(ctx cContext, pd cPD) int {
	var ch cChan
	var e C.int
	cq := C.nd_create_cq(ctx, 4, &ch, &e)
	if cq == nil {
		return 0
	}
	defer func() { C.ibv_destroy_cq(cq); C.ibv_destroy_comp_channel(ch) }()
	for _, n := range []int{256, 128, 80, 64, 32, 16} {
		var got C.int
		qp := C.nd_create_qp(pd, cq, cq, nil, 1, 1, 1, 1, C.int(n), &got, &e)
		if qp != nil {
			C.ibv_destroy_qp(qp)
			return min(int(got), 256)
		}
	}
	return 0
}

// ---- memory registration

const (
	accLocalWrite  = C.IBV_ACCESS_LOCAL_WRITE
	accRemoteRead  = C.IBV_ACCESS_REMOTE_READ
	accRemoteWrite = C.IBV_ACCESS_REMOTE_WRITE
)

func regMR(pd cPD, p unsafe.Pointer, n int, access int) (cMR, uint32, uint32, error) {
	mr, err := C.ibv_reg_mr(pd, p, C.size_t(n), C.int(access))
	if mr == nil {
		return nil, 0, 0, errnoOr(err, syscall.ENOMEM)
	}
	return mr, uint32(mr.lkey), uint32(mr.rkey), nil
}

func deregMR(mr cMR) { C.ibv_dereg_mr(mr) }

func cMalloc(n int) unsafe.Pointer {
	p := C.calloc(1, C.size_t(max(n, 1)))
	if p == nil {
		panic("verbs: out of C memory")
	}
	return p
}

func cFree(p unsafe.Pointer) { C.free(p) }

// ---- completion queues

func createCQ(ctx cContext, n int) (cCQ, cChan, int, error) {
	var ch cChan
	var e C.int
	cq := C.nd_create_cq(ctx, C.int(n), &ch, &e)
	if cq == nil {
		return nil, nil, 0, creationErr(e)
	}
	return cq, ch, int(ch.fd), nil
}

// createKeyGuard creates a completion queue of n entries that is never
// destroyed (siw_key_guard.go).
func createKeyGuard(ctx cContext, n int) error {
	if cq, err := C.nd_siw_key_guard(ctx, C.int(n)); cq == nil {
		return errnoOr(err, syscall.ENOMEM)
	}
	return nil
}

func destroyCQ(cq cCQ, ch cChan) {
	C.ibv_destroy_cq(cq)
	C.ibv_destroy_comp_channel(ch)
}

func resizeCQ(cq cCQ, n int) error {
	if rc := C.ibv_resize_cq(cq, C.int(n)); rc != 0 {
		return syscall.Errno(rc)
	}
	return nil
}

// getCQEvent reads and acknowledges one completion event; false when none
// is pending.
func getCQEvent(ch cChan) bool { return C.nd_get_cq_event(ch) == 0 }

func reqNotify(cq cCQ, solicited bool) {
	s := C.int(0)
	if solicited {
		s = 1
	}
	C.nd_req_notify_cq(cq, s)
}

// ---- queue pairs

// createQP creates an RC queue pair; with srq its Receives come from srq
// (rq and rsge are then not used).
func createQP(pd cPD, scq, rcq cCQ, srq cSRQ, sq, rq, ssge, rsge, inline int) (cQP, uint32, int, error) {
	var got, e C.int
	if srq != nil {
		rq, rsge = 0, 0
	}
	qp := C.nd_create_qp(pd, scq, rcq, srq, C.int(sq), C.int(rq), C.int(ssge), C.int(rsge), C.int(inline), &got, &e)
	if qp == nil {
		return nil, 0, 0, creationErr(e)
	}
	return qp, uint32(qp.qp_num), int(got), nil
}

func destroyQP(qp cQP) { C.ibv_destroy_qp(qp) }

func qpModify(id cID, qp cQP, state int, rdAtomic, destRdAtomic int) error {
	if rc := C.nd_qp_modify(id, qp, C.int(state), C.int(rdAtomic), C.int(destRdAtomic)); rc != 0 {
		return syscall.Errno(rc)
	}
	return nil
}

func qpError(qp cQP) { C.nd_qp_error(qp) }

// ---- shared receive queues

func createSRQ(pd cPD, wr, sge int, h uintptr) (cSRQ, error) {
	var e C.int
	s := C.nd_create_srq(pd, C.int(wr), C.int(sge), C.uintptr_t(h), &e)
	if s == nil {
		return nil, creationErr(e)
	}
	return s, nil
}

func destroySRQ(s cSRQ) error {
	if rc := C.ibv_destroy_srq(s); rc != 0 {
		return syscall.Errno(rc)
	}
	return nil
}

// armSRQ asks the device for one IBV_EVENT_SRQ_LIMIT_REACHED when fewer
// than limit Receives remain in s.
func armSRQ(s cSRQ, limit int) error {
	if rc := C.nd_arm_srq(s, C.int(limit)); rc != 0 {
		return syscall.Errno(rc)
	}
	return nil
}

// asyncEvent types the provider acts on.
const (
	evSRQLimit = C.IBV_EVENT_SRQ_LIMIT_REACHED
	evSRQErr   = C.IBV_EVENT_SRQ_ERR
)

// asyncFD makes the context's asynchronous event descriptor non-blocking
// and returns it.
func asyncFD(ctx cContext) (int, error) {
	fd := int(C.nd_async_fd(ctx))
	if rc := C.nd_set_nonblock(C.int(fd)); rc != 0 {
		return -1, syscall.Errno(-rc)
	}
	return fd, nil
}

// getAsyncEvent reads and acknowledges one asynchronous event; ok false
// when none is pending. h is the handle of the shared receive queue an SRQ
// event names.
func getAsyncEvent(ctx cContext) (typ int, h uintptr, ok bool, err error) {
	var t C.int
	var hh C.uintptr_t
	rc := C.nd_get_async_event(ctx, &t, &hh)
	if rc == -C.EAGAIN {
		return 0, 0, false, nil
	}
	if rc < 0 {
		return 0, 0, false, syscall.Errno(-rc)
	}
	return int(t), uintptr(hh), true, nil
}

// ---- rdma_cm

func createEventChannel() (cEvCh, int, error) {
	ch, err := C.rdma_create_event_channel()
	if ch == nil {
		return nil, 0, errnoOr(err, syscall.ENODEV)
	}
	if rc := C.nd_set_nonblock(ch.fd); rc != 0 {
		C.rdma_destroy_event_channel(ch)
		return nil, 0, syscall.Errno(-rc)
	}
	return ch, int(ch.fd), nil
}

func destroyEventChannel(ch cEvCh) { C.rdma_destroy_event_channel(ch) }

func newEv() cEv { return cEv(cMalloc(int(unsafe.Sizeof(C.struct_nd_ev{})))) }

// cmEvent is an rdma_cm event copied into Go memory.
type cmEvent struct {
	typ, status          int
	id, listenID         cID
	handle, listenHandle uintptr
	ird, ord             int
	pd                   []byte
}

// getCMEvent reads one event; ok false when none is pending; err for a
// broken channel.
func getCMEvent(ch cEvCh, ev cEv) (e cmEvent, ok bool, err error) {
	rc := C.nd_get_cm_event(ch, ev)
	if rc == -C.EAGAIN {
		return e, false, nil
	}
	if rc < 0 {
		return e, false, syscall.Errno(-rc)
	}
	e = cmEvent{
		typ: int(ev._type), status: int(ev.status), id: ev.id, listenID: ev.listen_id,
		handle: uintptr(ev.handle), listenHandle: uintptr(ev.listen_handle),
		ird: int(ev.ird), ord: int(ev.ord),
	}
	if ev.pd_len > 0 {
		e.pd = C.GoBytes(unsafe.Pointer(&ev.pd[0]), ev.pd_len)
	}
	return e, true, nil
}

func createID(ch cEvCh, h uintptr) (cID, error) {
	var e C.int
	id := C.nd_create_id(ch, C.uintptr_t(h), &e)
	if id == nil {
		return nil, syscall.Errno(e)
	}
	return id, nil
}

func setHandle(id cID, h uintptr) { C.nd_set_handle(id, C.uintptr_t(h)) }
func destroyID(id cID)            { C.rdma_destroy_id(id) }
func idVerbs(id cID) cContext     { return C.nd_id_verbs(id) }

func bindAddr(id cID, ap netip.AddrPort) error {
	if rc := C.nd_bind(id, ip4(ap.Addr()), C.uint16_t(ap.Port())); rc != 0 {
		return syscall.Errno(rc)
	}
	return nil
}

func resolveAddr(id cID, ap netip.AddrPort, ms int) error {
	if rc := C.nd_resolve_addr(id, ip4(ap.Addr()), C.uint16_t(ap.Port()), C.int(ms)); rc != 0 {
		return syscall.Errno(rc)
	}
	return nil
}

func resolveRoute(id cID, ms int) error {
	if rc, err := C.rdma_resolve_route(id, C.int(ms)); rc != 0 {
		return errnoOr(err, syscall.EINVAL)
	}
	return nil
}

func listenID(id cID, backlog int) error {
	if rc, err := C.rdma_listen(id, C.int(backlog)); rc != 0 {
		return errnoOr(err, syscall.EINVAL)
	}
	return nil
}

func idAddrs(id cID) (local, peer netip.AddrPort) {
	var sip, dip C.uint32_t
	var sp, dp C.uint16_t
	C.nd_addrs(id, &sip, &sp, &dip, &dp)
	return fromIP4(sip, sp), fromIP4(dip, dp)
}

func cmConnect(id cID, qpn uint32, pd []byte, ird, ord, rnr int, accept bool) error {
	var p unsafe.Pointer
	if len(pd) > 0 {
		p = unsafe.Pointer(&pd[0])
	}
	acc := C.int(0)
	if accept {
		acc = 1
	}
	if rc := C.nd_connect(id, C.uint32_t(qpn), p, C.int(len(pd)), C.int(ird), C.int(ord), C.int(rnr), acc); rc != 0 {
		return syscall.Errno(rc)
	}
	return nil
}

func cmReject(id cID, pd []byte) error {
	var p unsafe.Pointer
	if len(pd) > 0 {
		p = unsafe.Pointer(&pd[0])
	}
	if rc := C.nd_reject(id, p, C.int(len(pd))); rc != 0 {
		return syscall.Errno(rc)
	}
	return nil
}

func cmEstablish(id cID) error {
	if rc, err := C.rdma_establish(id); rc != 0 {
		return errnoOr(err, syscall.EINVAL)
	}
	return nil
}

func cmDisconnect(id cID) { C.rdma_disconnect(id) }

// errStatus maps an errno from a control-path call to an ND status.
func errStatus(err error, def nd.Status) nd.Status {
	switch err {
	case syscall.EADDRINUSE:
		return nd.ErrAddressAlreadyExists
	case syscall.ENOMEM:
		return nd.ErrNoMemory
	case syscall.ECONNREFUSED:
		return nd.ErrConnectionRefused
	case syscall.ENETUNREACH:
		return nd.ErrNetworkUnreachable
	case syscall.EHOSTUNREACH:
		return nd.ErrHostUnreachable
	case syscall.ETIMEDOUT:
		return nd.ErrIOTimeout
	}
	return def
}
