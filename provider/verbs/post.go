//go:build verbs && linux

package verbs

/*
#include <stdlib.h>
#include "nd_verbs.h"
*/
import "C"

import (
	"syscall"
	"unsafe"

	"github.com/godirect/nd"
)

// Work requests and scatter/gather entries live in C memory allocated once
// per endpoint, so posting stores no Go pointer in C memory except addresses
// of registered buffers, which their registration keeps pinned.

const (
	opSend    = C.IBV_WR_SEND
	opSendInv = C.IBV_WR_SEND_WITH_INV
	opWrite   = C.IBV_WR_RDMA_WRITE
	opRead    = C.IBV_WR_RDMA_READ

	sendFence     = C.IBV_SEND_FENCE
	sendSignaled  = C.IBV_SEND_SIGNALED
	sendSolicited = C.IBV_SEND_SOLICITED
	sendInline    = C.IBV_SEND_INLINE
)

// sendArea is a batch of send work requests in C memory.
type sendArea struct {
	wrs    *C.struct_ibv_send_wr
	sges   *C.struct_ibv_sge
	cap    int   // work requests
	maxSGE int   // entries per request
	n      int   // work requests filled and not yet posted
	bad    C.int // the failed request's index; a field, so that posting allocates nothing
}

func newSendArea(capWR, maxSGE int) *sendArea {
	maxSGE = max(maxSGE, 1)
	return &sendArea{
		wrs:  (*C.struct_ibv_send_wr)(cMalloc(capWR * int(unsafe.Sizeof(C.struct_ibv_send_wr{})))),
		sges: (*C.struct_ibv_sge)(cMalloc(capWR * maxSGE * int(unsafe.Sizeof(C.struct_ibv_sge{})))),
		cap:  capWR, maxSGE: maxSGE,
	}
}

func (s *sendArea) free() {
	cFree(unsafe.Pointer(s.wrs))
	cFree(unsafe.Pointer(s.sges))
}

func (s *sendArea) wr(i int) *C.struct_ibv_send_wr {
	return (*C.struct_ibv_send_wr)(unsafe.Add(unsafe.Pointer(s.wrs), i*int(unsafe.Sizeof(C.struct_ibv_send_wr{}))))
}

func (s *sendArea) sge(i, j int) *C.struct_ibv_sge {
	return (*C.struct_ibv_sge)(unsafe.Add(unsafe.Pointer(s.sges), (i*s.maxSGE+j)*int(unsafe.Sizeof(C.struct_ibv_sge{}))))
}

// add starts the next work request and returns its index.
func (s *sendArea) add(wrID uint64, op, flags int, raddr uint64, rkey, inv uint32) int {
	i := s.n
	s.n++
	w := s.wr(i)
	*w = C.struct_ibv_send_wr{}
	w.wr_id = C.uint64_t(wrID)
	w.opcode = uint32(op)
	w.send_flags = C.uint(flags)
	w.sg_list = s.sge(i, 0)
	p := unsafe.Pointer(w)
	*(*uint64)(unsafe.Add(p, C.ND_WR_RADDR_OFF)) = raddr
	*(*uint32)(unsafe.Add(p, C.ND_WR_RKEY_OFF)) = rkey
	if op == opSendInv {
		*(*uint32)(unsafe.Add(p, C.ND_WR_INV_OFF)) = inv
	}
	if i > 0 {
		s.wr(i - 1).next = w
	}
	return i
}

// addSGE appends an entry to work request i.
func (s *sendArea) addSGE(i int, addr uintptr, n int, lkey uint32) {
	w := s.wr(i)
	e := s.sge(i, int(w.num_sge))
	e.addr = C.uint64_t(addr)
	e.length = C.uint32_t(n)
	e.lkey = C.uint32_t(lkey)
	w.num_sge++
}

func (s *sendArea) orFlags(i, flags int) { s.wr(i).send_flags |= C.uint(flags) }

// post posts the batch: it returns how many were posted and the error.
func (s *sendArea) post(qp cQP) (int, error) {
	if s.n == 0 {
		return 0, nil
	}
	n := s.n
	s.n = 0
	if rc := C.nd_post_send(qp, s.wrs, &s.bad); rc != 0 {
		return int(s.bad), syscall.Errno(rc)
	}
	return n, nil
}

// recvArea is a batch of receive work requests in C memory.
type recvArea struct {
	wrs    *C.struct_ibv_recv_wr
	sges   *C.struct_ibv_sge
	cap    int
	maxSGE int
	n      int
	bad    C.int // as sendArea's
}

func newRecvArea(capWR, maxSGE int) *recvArea {
	maxSGE = max(maxSGE, 1)
	return &recvArea{
		wrs:  (*C.struct_ibv_recv_wr)(cMalloc(capWR * int(unsafe.Sizeof(C.struct_ibv_recv_wr{})))),
		sges: (*C.struct_ibv_sge)(cMalloc(capWR * maxSGE * int(unsafe.Sizeof(C.struct_ibv_sge{})))),
		cap:  capWR, maxSGE: maxSGE,
	}
}

func (r *recvArea) free() {
	cFree(unsafe.Pointer(r.wrs))
	cFree(unsafe.Pointer(r.sges))
}

func (r *recvArea) wr(i int) *C.struct_ibv_recv_wr {
	return (*C.struct_ibv_recv_wr)(unsafe.Add(unsafe.Pointer(r.wrs), i*int(unsafe.Sizeof(C.struct_ibv_recv_wr{}))))
}

func (r *recvArea) sge(i, j int) *C.struct_ibv_sge {
	return (*C.struct_ibv_sge)(unsafe.Add(unsafe.Pointer(r.sges), (i*r.maxSGE+j)*int(unsafe.Sizeof(C.struct_ibv_sge{}))))
}

func (r *recvArea) add(wrID uint64) int {
	i := r.n
	r.n++
	w := r.wr(i)
	*w = C.struct_ibv_recv_wr{}
	w.wr_id = C.uint64_t(wrID)
	w.sg_list = r.sge(i, 0)
	if i > 0 {
		r.wr(i - 1).next = w
	}
	return i
}

func (r *recvArea) addSGE(i int, addr uintptr, n int, lkey uint32) {
	w := r.wr(i)
	e := r.sge(i, int(w.num_sge))
	e.addr = C.uint64_t(addr)
	e.length = C.uint32_t(n)
	e.lkey = C.uint32_t(lkey)
	w.num_sge++
}

func (r *recvArea) post(qp cQP) (int, error) {
	if r.n == 0 {
		return 0, nil
	}
	n := r.n
	r.n = 0
	if rc := C.nd_post_recv(qp, r.wrs, &r.bad); rc != 0 {
		return int(r.bad), syscall.Errno(rc)
	}
	return n, nil
}

// postSRQ posts the batch to a shared receive queue.
func (r *recvArea) postSRQ(s cSRQ) (int, error) {
	if r.n == 0 {
		return 0, nil
	}
	n := r.n
	r.n = 0
	if rc := C.nd_post_srq_recv(s, r.wrs, &r.bad); rc != 0 {
		return int(r.bad), syscall.Errno(rc)
	}
	return n, nil
}

// wcArea receives a batch of polled work completions.
type wcArea struct {
	wcs *C.struct_ibv_wc
	cap int
}

func newWCArea(n int) *wcArea {
	return &wcArea{wcs: (*C.struct_ibv_wc)(cMalloc(n * int(unsafe.Sizeof(C.struct_ibv_wc{})))), cap: n}
}

func (a *wcArea) free() { cFree(unsafe.Pointer(a.wcs)) }

// poll polls up to a.cap completions with one cgo call.
func (a *wcArea) poll(cq cCQ) int {
	n := int(C.nd_poll_cq(cq, C.int(a.cap), a.wcs))
	return max(n, 0)
}

// wc returns completion i of the last poll.
func (a *wcArea) wc(i int) (wrID uint64, status int, recv bool, bytes int) {
	w := a.at(i)
	return uint64(w.wr_id), int(w.status), w.opcode&C.IBV_WC_RECV != 0, int(w.byte_len)
}

// qpNum returns the queue pair number of completion i of the last poll.
func (a *wcArea) qpNum(i int) uint32 { return uint32(a.at(i).qp_num) }

func (a *wcArea) at(i int) *C.struct_ibv_wc {
	return (*C.struct_ibv_wc)(unsafe.Add(unsafe.Pointer(a.wcs), i*int(unsafe.Sizeof(C.struct_ibv_wc{}))))
}

// wcStatus maps an ibv_wc_status to the ND status of the request and its
// cause (the device's local and remote access errors, which ND gives one
// status); recv tells whether the request was a Receive. docs/verbs.md has
// the table.
func wcStatus(s int, recv, iwarp bool) (nd.Status, nd.Cause) {
	switch s {
	case C.IBV_WC_LOC_PROT_ERR, C.IBV_WC_LOC_ACCESS_ERR, C.IBV_WC_LOC_RDD_VIOL_ERR:
		return nd.ErrAccessViolation, nd.CauseLocalAccess
	case C.IBV_WC_REM_ACCESS_ERR, C.IBV_WC_REM_INV_RD_REQ_ERR:
		return nd.ErrAccessViolation, nd.CauseRemoteAccess
	}
	return wcStatusOnly(s, recv, iwarp), nd.CauseNone
}

// wcStatusOnly is wcStatus's status for the statuses without a cause.
func wcStatusOnly(s int, recv, iwarp bool) nd.Status {
	switch s {
	case C.IBV_WC_SUCCESS:
		return nd.Success
	case C.IBV_WC_WR_FLUSH_ERR:
		return nd.ErrCanceled
	case C.IBV_WC_LOC_LEN_ERR:
		if recv {
			return nd.ErrBufferOverflow
		}
		return nd.ErrLocalLength
	case C.IBV_WC_LOC_QP_OP_ERR, C.IBV_WC_LOC_EEC_OP_ERR:
		if recv && !iwarp {
			return nd.ErrBufferOverflow // rxe: a Send longer than the Receive
		}
		return nd.ErrInvalidRequest
	case C.IBV_WC_MW_BIND_ERR:
		return nd.ErrInvalidRequest
	case C.IBV_WC_BAD_RESP_ERR:
		return nd.ErrRemoteError
	case C.IBV_WC_REM_INV_REQ_ERR:
		switch {
		case recv && iwarp:
			return nd.ErrInvalidationError
		case recv:
			return nd.ErrBufferOverflow // rxe: the Send was longer than the Receive
		}
		return nd.ErrRemoteError
	case C.IBV_WC_REM_OP_ERR, C.IBV_WC_REM_ABORT_ERR:
		return nd.ErrRemoteError
	case C.IBV_WC_RNR_RETRY_EXC_ERR:
		return nd.ErrRemoteError
	case C.IBV_WC_RETRY_EXC_ERR, C.IBV_WC_RESP_TIMEOUT_ERR:
		return nd.ErrIOTimeout
	case C.IBV_WC_FATAL_ERR, C.IBV_WC_INV_EECN_ERR, C.IBV_WC_INV_EEC_STATE_ERR:
		return nd.ErrInternalError
	}
	return nd.ErrUnsuccessful
}
