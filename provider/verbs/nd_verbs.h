/* Minimal C helpers for provider/verbs (build tag verbs): wrappers for the
 * verbs calls that are static inline in verbs.h, and for rdma_cm calls that
 * need struct sockaddr or read event fields. No helper keeps a Go pointer. */
#ifndef ND_VERBS_H
#define ND_VERBS_H
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <arpa/inet.h>
#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

enum {
	ND_WR_RADDR_OFF = offsetof(struct ibv_send_wr, wr.rdma.remote_addr),
	ND_WR_RKEY_OFF = offsetof(struct ibv_send_wr, wr.rdma.rkey),
	ND_WR_INV_OFF = offsetof(struct ibv_send_wr, invalidate_rkey),
};

static inline int nd_set_nonblock(int fd) {
	int f = fcntl(fd, F_GETFL);
	if (f < 0 || fcntl(fd, F_SETFL, f | O_NONBLOCK) < 0) return -errno;
	return 0;
}

static inline int nd_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr, int *bad) {
	struct ibv_send_wr *b = NULL;
	int rc = ibv_post_send(qp, wr, &b);
	*bad = 0;
	for (struct ibv_send_wr *w = wr; rc && w && w != b; w = w->next) (*bad)++;
	return rc;
}

static inline int nd_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr, int *bad) {
	struct ibv_recv_wr *b = NULL;
	int rc = ibv_post_recv(qp, wr, &b);
	*bad = 0;
	for (struct ibv_recv_wr *w = wr; rc && w && w != b; w = w->next) (*bad)++;
	return rc;
}

static inline int nd_poll_cq(struct ibv_cq *cq, int n, struct ibv_wc *wc) { return ibv_poll_cq(cq, n, wc); }

static inline int nd_req_notify_cq(struct ibv_cq *cq, int solicited) { return ibv_req_notify_cq(cq, solicited); }

/* nd_get_cq_event reads one event from a non-blocking channel: 0, or -EAGAIN. */
static inline int nd_get_cq_event(struct ibv_comp_channel *ch) {
	struct ibv_cq *cq;
	void *ctx;
	if (ibv_get_cq_event(ch, &cq, &ctx)) return -errno;
	ibv_ack_cq_events(cq, 1);
	return 0;
}

static inline int nd_query(struct ibv_context *ctx, int port, struct ibv_device_attr *da, struct ibv_port_attr *pa) {
	int rc = ibv_query_device(ctx, da);
	if (rc) return -rc;
	rc = ibv_query_port(ctx, (uint8_t)port, pa);
	return rc ? -rc : 0;
}

static inline int nd_is_iwarp(struct ibv_context *ctx) { return ctx->device->transport_type == IBV_TRANSPORT_IWARP; }
static inline const char *nd_dev_name(struct ibv_context *ctx) { return ibv_get_device_name(ctx->device); }

static inline void nd_sin(struct sockaddr_in *sa, uint32_t ip, uint16_t port) {
	memset(sa, 0, sizeof *sa);
	sa->sin_family = AF_INET;
	sa->sin_addr.s_addr = htonl(ip);
	sa->sin_port = htons(port);
}

static inline struct rdma_cm_id *nd_create_id(struct rdma_event_channel *ch, uintptr_t h, int *err) {
	struct rdma_cm_id *id = NULL;
	if (rdma_create_id(ch, &id, (void *)h, RDMA_PS_TCP)) { *err = errno; return NULL; }
	return id;
}
static inline void nd_set_handle(struct rdma_cm_id *id, uintptr_t h) { id->context = (void *)h; }
static inline struct ibv_context *nd_id_verbs(struct rdma_cm_id *id) { return id->verbs; }
static inline int nd_id_port(struct rdma_cm_id *id) { return id->port_num; }

static inline int nd_bind(struct rdma_cm_id *id, uint32_t ip, uint16_t port) {
	struct sockaddr_in sa;
	nd_sin(&sa, ip, port);
	return rdma_bind_addr(id, (struct sockaddr *)&sa) ? errno : 0;
}

static inline int nd_resolve_addr(struct rdma_cm_id *id, uint32_t ip, uint16_t port, int ms) {
	struct sockaddr_in sa;
	nd_sin(&sa, ip, port);
	return rdma_resolve_addr(id, NULL, (struct sockaddr *)&sa, ms) ? errno : 0;
}

static inline void nd_addrs(struct rdma_cm_id *id, uint32_t *sip, uint16_t *sport, uint32_t *dip, uint16_t *dport) {
	struct sockaddr_in *s = (struct sockaddr_in *)rdma_get_local_addr(id);
	struct sockaddr_in *d = (struct sockaddr_in *)rdma_get_peer_addr(id);
	*sip = s->sin_family == AF_INET ? ntohl(s->sin_addr.s_addr) : 0;
	*dip = d->sin_family == AF_INET ? ntohl(d->sin_addr.s_addr) : 0;
	*sport = ntohs(rdma_get_src_port(id));
	*dport = ntohs(rdma_get_dst_port(id));
}

/* nd_probe tells whether ip belongs to an RDMA device port. */
static inline int nd_probe(uint32_t ip, struct ibv_context **ctx, int *port) {
	int err = 0;
	struct rdma_cm_id *id = nd_create_id(NULL, 0, &err);
	if (!id) return err;
	err = nd_bind(id, ip, 0);
	if (!err && id->verbs) { *ctx = id->verbs; *port = id->port_num; } else if (!err) err = ENODEV;
	rdma_destroy_id(id);
	return err;
}

/* nd_ev is one rdma_cm event copied out of librdmacm's memory. */
struct nd_ev {
	int type, status;
	struct rdma_cm_id *id, *listen_id;
	uintptr_t handle, listen_handle;
	int ird, ord; /* the peer's, from the local point of view: initiator_depth, responder_resources */
	int pd_len;
	uint8_t pd[256];
};

static inline int nd_get_cm_event(struct rdma_event_channel *ch, struct nd_ev *ev) {
	struct rdma_cm_event *e;
	if (rdma_get_cm_event(ch, &e)) return -errno;
	memset(ev, 0, offsetof(struct nd_ev, pd));
	ev->type = e->event;
	ev->status = e->status;
	ev->id = e->id;
	ev->listen_id = e->listen_id;
	ev->handle = (uintptr_t)e->id->context;
	ev->listen_handle = e->listen_id ? (uintptr_t)e->listen_id->context : 0;
	if (e->id->ps == RDMA_PS_TCP || e->id->ps == RDMA_PS_IB) {
		ev->ird = e->param.conn.initiator_depth;
		ev->ord = e->param.conn.responder_resources;
		ev->pd_len = e->param.conn.private_data_len;
		if (ev->pd_len > (int)sizeof ev->pd) ev->pd_len = sizeof ev->pd;
		if (e->param.conn.private_data && ev->pd_len > 0) memcpy(ev->pd, e->param.conn.private_data, ev->pd_len);
		else ev->pd_len = 0;
	}
	rdma_ack_cm_event(e);
	return 0;
}

/* nd_connect sends the REQ (or, with accept, the REP or MPA reply). rnr is
 * the RNR retry count announced to the peer: on RoCE/IB the peer's queue
 * pair retries its Sends that find no Receive here that many times (7:
 * without end). */
static inline int nd_connect(struct rdma_cm_id *id, uint32_t qpn, const void *pd, int len, int ird, int ord, int rnr, int accept) {
	struct rdma_conn_param p;
	memset(&p, 0, sizeof p);
	p.private_data = len ? pd : NULL;
	p.private_data_len = (uint8_t)len;
	p.responder_resources = (uint8_t)ird;
	p.initiator_depth = (uint8_t)ord;
	p.flow_control = 1;
	p.retry_count = 7;
	p.rnr_retry_count = (uint8_t)rnr;
	p.qp_num = qpn;
	if (accept) return rdma_accept(id, &p) ? errno : 0;
	return rdma_connect(id, &p) ? errno : 0;
}

static inline int nd_reject(struct rdma_cm_id *id, const void *pd, int len) {
	return rdma_reject(id, len ? pd : NULL, (uint8_t)len) ? errno : 0;
}

/* The creations below clear errno first: a device library that fails
 * without setting it leaves 0 (libsiw's refused key, siw_key_guard.go),
 * which errno left over from an earlier call would hide. */

/* nd_siw_key_guard creates a completion queue of n entries and no channel
 * (siw_key_guard.go). */
static inline struct ibv_cq *nd_siw_key_guard(struct ibv_context *ctx, int n) {
	return ibv_create_cq(ctx, n, NULL, NULL, 0);
}

static inline struct ibv_qp *nd_create_qp(struct ibv_pd *pd, struct ibv_cq *scq, struct ibv_cq *rcq, struct ibv_srq *srq,
		int sq, int rq, int ssge, int rsge, int inl, int *granted_inline, int *err) {
	struct ibv_qp_init_attr a;
	memset(&a, 0, sizeof a);
	a.send_cq = scq;
	a.recv_cq = rcq;
	a.srq = srq;
	a.qp_type = IBV_QPT_RC;
	a.sq_sig_all = 1;
	a.cap.max_send_wr = sq;
	a.cap.max_recv_wr = rq;
	a.cap.max_send_sge = ssge;
	a.cap.max_recv_sge = rsge;
	a.cap.max_inline_data = inl;
	errno = 0;
	struct ibv_qp *qp = ibv_create_qp(pd, &a);
	if (!qp) { *err = errno; return NULL; }
	*granted_inline = a.cap.max_inline_data;
	return qp;
}

/* nd_qp_modify moves qp to state with the attributes rdma_cm computes for
 * id (INIT, RTR, RTS), overriding the read limits when >= 0. The RNR retry
 * count at RTS is the peer's, from its REQ or REP, as the IB CM means it:
 * the receiver says how long a Send may wait for its Receive. */
static inline int nd_qp_modify(struct rdma_cm_id *id, struct ibv_qp *qp, int state, int rd_atomic, int dest_rd_atomic) {
	struct ibv_qp_attr a;
	int mask = 0;
	memset(&a, 0, sizeof a);
	a.qp_state = state;
	if (rdma_init_qp_attr(id, &a, &mask)) return errno;
	if (state == IBV_QPS_INIT) a.qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE;
	if (rd_atomic >= 0 && (mask & IBV_QP_MAX_QP_RD_ATOMIC)) a.max_rd_atomic = rd_atomic;
	if (dest_rd_atomic >= 0 && (mask & IBV_QP_MAX_DEST_RD_ATOMIC)) a.max_dest_rd_atomic = dest_rd_atomic;
	return ibv_modify_qp(qp, &a, mask);
}

static inline int nd_qp_error(struct ibv_qp *qp) {
	struct ibv_qp_attr a;
	memset(&a, 0, sizeof a);
	a.qp_state = IBV_QPS_ERR;
	return ibv_modify_qp(qp, &a, IBV_QP_STATE);
}

static inline struct ibv_cq *nd_create_cq(struct ibv_context *ctx, int n, struct ibv_comp_channel **chp, int *err) {
	struct ibv_comp_channel *ch = ibv_create_comp_channel(ctx);
	if (!ch) { *err = errno; return NULL; }
	int rc = nd_set_nonblock(ch->fd);
	if (rc) { *err = -rc; ibv_destroy_comp_channel(ch); return NULL; }
	errno = 0;
	struct ibv_cq *cq = ibv_create_cq(ctx, n, NULL, ch, 0);
	if (!cq) { *err = errno; ibv_destroy_comp_channel(ch); return NULL; }
	*chp = ch;
	return cq;
}

/* Shared receive queues: srq_context carries the provider's handle of the
 * queue, which the asynchronous events name. */
static inline struct ibv_srq *nd_create_srq(struct ibv_pd *pd, int wr, int sge, uintptr_t h, int *err) {
	struct ibv_srq_init_attr a;
	memset(&a, 0, sizeof a);
	a.srq_context = (void *)h;
	a.attr.max_wr = wr;
	a.attr.max_sge = sge;
	errno = 0;
	struct ibv_srq *s = ibv_create_srq(pd, &a);
	if (!s) { *err = errno; return NULL; }
	return s;
}

static inline int nd_post_srq_recv(struct ibv_srq *srq, struct ibv_recv_wr *wr, int *bad) {
	struct ibv_recv_wr *b = NULL;
	int rc = ibv_post_srq_recv(srq, wr, &b);
	*bad = 0;
	for (struct ibv_recv_wr *w = wr; rc && w && w != b; w = w->next) (*bad)++;
	return rc;
}

/* nd_arm_srq sets the queue's limit: the device raises
 * IBV_EVENT_SRQ_LIMIT_REACHED once when fewer WQEs than limit remain. */
static inline int nd_arm_srq(struct ibv_srq *srq, int limit) {
	struct ibv_srq_attr a;
	memset(&a, 0, sizeof a);
	a.srq_limit = (uint32_t)limit;
	return ibv_modify_srq(srq, &a, IBV_SRQ_LIMIT);
}

/* nd_get_async_event reads one asynchronous event of a device context whose
 * descriptor is non-blocking: 0, or -errno (-EAGAIN: none). *h is the
 * handle of the shared receive queue an SRQ event names, else 0. */
static inline int nd_get_async_event(struct ibv_context *ctx, int *type, uintptr_t *h) {
	struct ibv_async_event e;
	if (ibv_get_async_event(ctx, &e)) return -errno;
	*type = e.event_type;
	*h = 0;
	if (e.event_type == IBV_EVENT_SRQ_LIMIT_REACHED || e.event_type == IBV_EVENT_SRQ_ERR)
		*h = (uintptr_t)e.element.srq->srq_context;
	ibv_ack_async_event(&e);
	return 0;
}

static inline int nd_async_fd(struct ibv_context *ctx) { return ctx->async_fd; }
#endif
