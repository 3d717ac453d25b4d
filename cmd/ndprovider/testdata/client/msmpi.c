/*
 * msmpi.c: the ND calls MS-MPI's channels make (src/mpi/msmpi/channels,
 * ch3u_nd2_*.cpp and ch3u_nd1_*.cpp), in the order one pair of ranks makes
 * them, with MS-MPI's arguments and the status handling its code has: a
 * completion port shared by the whole process with ND's key, OVERLAPPEDs
 * inside larger structures (callbacks after them), synchronous
 * registrations with the event's low bit set, 128 (v2) or 64 (v1) Receives
 * posted before the connection, the connector bound to the listener's own
 * port (v2), protocol 123 (v1), 28 bytes of caller data and 1 of callee
 * data, inline Sends (v2) and fenced Sends (v1), zero-copy RDMA Reads of a
 * region's remote token (v2) or of a window whose descriptor travels in a
 * Send and is reposted before the Read completes (v1), Notify armed only
 * when idle, Disconnect after the sends drained, and its order of releases.
 */
#include "side1.h"

#define EX_KEY_ND 4
#define RECVQ2 128
#define SENDQ2 16
#define MSG2 8096
#define RECVQ1 64
#define MSG1 2048

/* An OVERLAPPED with what MS-MPI keeps after it: the provider must not
 * write past the OVERLAPPED. */
typedef struct ExOv {
	OVERLAPPED ov;
	void *callback;
	void *failure;
} ExOv;
static char sentinel;
static void exInit(ExOv *x) {
	memset(x, 0, sizeof *x);
	x->callback = x->failure = &sentinel;
}
#define EXOK(x) TRUTH("nothing written after the OVERLAPPED", (x)->callback == &sentinel && (x)->failure == &sentinel)

/* The caller data of MS-MPI's connection requests (28 bytes). */
typedef struct CallerData {
	INT32 Version;
	INT32 Rank;
	UINT8 Credits;
	UINT8 pad[3];
	GUID GroupId;
} CallerData;

/* packet takes the next packet from port and checks it is ov's, on key. */
static OVERLAPPED *packet(HANDLE port, ULONG_PTR want) {
	DWORD bytes;
	ULONG_PTR key = 99;
	OVERLAPPED *ov = NULL;
	GetQueuedCompletionStatus(port, &bytes, &key, &ov, 10000);
	TRUTH("a packet on MS-MPI's port", ov != NULL);
	TRUTH("with ND's key", key == want);
	return ov;
}

/* registerSync is MS-MPI's synchronous registration: a fresh auto-reset
 * event with bit 0 set, GetOverlappedResult(TRUE) only after ND_PENDING,
 * the event closed at once. */
static HRESULT registerSync2(IND2MemoryRegion *mr, void *buf, SIZE_T len, ULONG flags) {
	OVERLAPPED ov = {0};
	HANDLE ev = CreateEventA(NULL, FALSE, FALSE, NULL);
	ov.hEvent = (HANDLE)((ULONG_PTR)ev | 1);
	HRESULT hr = mr->lpVtbl->Register(mr, buf, len, flags, &ov);
	if (hr == ND_PENDING)
		hr = mr->lpVtbl->GetOverlappedResult(mr, &ov, TRUE);
	CloseHandle(ev);
	return hr;
}

static HRESULT deregisterSync2(IND2MemoryRegion *mr) {
	OVERLAPPED ov = {0};
	HANDLE ev = CreateEventA(NULL, FALSE, FALSE, NULL);
	ov.hEvent = (HANDLE)((ULONG_PTR)ev | 1);
	HRESULT hr = mr->lpVtbl->Deregister(mr, &ov);
	if (hr == ND_PENDING)
		hr = mr->lpVtbl->GetOverlappedResult(mr, &ov, TRUE);
	CloseHandle(ev);
	return hr;
}

/* Rank2 is one MS-MPI rank's ND v2 endpoint (Endpoint::Init). */
typedef struct Rank2 {
	IND2Adapter *ad;
	HANDLE file;
	ND2_ADAPTER_INFO info;
	IND2CompletionQueue *cq;
	IND2QueuePair *qp;
	IND2MemoryRegion *mr;
	IND2Connector *conn;
	ExOv connOv, notifyOv;
	char *msgs; /* (SENDQ + RECVQ) messages, not page aligned */
	UINT32 token;
	ULONG recvCb[RECVQ2];
	int armed;
} Rank2;

static void endpoint2(Rank2 *r) {
	ULONG depth = 160; /* SendQ + 16 + RecvQ for one peer */
	CHECK("CreateCompletionQueue", r->ad->lpVtbl->CreateCompletionQueue(r->ad, &IID_IND2CompletionQueue, r->file, depth, 0, 0, (void **)&r->cq), ND_SUCCESS);
	CHECK("CreateQueuePair", r->ad->lpVtbl->CreateQueuePair(r->ad, &IID_IND2QueuePair, (IUnknown *)r->cq, (IUnknown *)r->cq, r, RECVQ2, SENDQ2 + 16, 1, 1, r->info.InlineRequestThreshold, (void **)&r->qp), ND_SUCCESS);
	CHECK("CreateMemoryRegion", r->ad->lpVtbl->CreateMemoryRegion(r->ad, &IID_IND2MemoryRegion, r->file, (void **)&r->mr), ND_SUCCESS);
	r->msgs = malloc((SENDQ2 + RECVQ2) * MSG2 + 8) + 8;
	CHECK("Register (synchronous, no packet)", registerSync2(r->mr, r->msgs, (SENDQ2 + RECVQ2) * MSG2, ND_MR_FLAG_ALLOW_LOCAL_WRITE | ND_MR_FLAG_DO_NOT_SECURE_VM), ND_SUCCESS);
	r->token = r->mr->lpVtbl->GetLocalToken(r->mr);
	for (int i = 0; i < RECVQ2; i++) {
		ND2_SGE sge = {r->msgs + (SENDQ2 + i) * MSG2, MSG2, r->token};
		CHECK("Receive before the connection", r->qp->lpVtbl->Receive(r->qp, &r->recvCb[i], &sge, 1), ND_SUCCESS);
	}
	exInit(&r->connOv);
	exInit(&r->notifyOv);
}

static void open2rank(Rank2 *r, HANDLE port) {
	memset(r, 0, sizeof *r);
	IND2Provider *p = NULL;
	CHECK("DllGetClassObject(IND2Provider)", getClassObject(&providerClass, &IID_IND2Provider, (void **)&p), ND_SUCCESS);
	ULONG cb = 0;
	CHECK("QueryAddressList probe", p->lpVtbl->QueryAddressList(p, NULL, &cb), ND_BUFFER_OVERFLOW);
	UINT64 id;
	CHECK("ResolveAddress", p->lpVtbl->ResolveAddress(p, (struct sockaddr *)&localAddr, sizeof localAddr, &id), ND_SUCCESS);
	CHECK("OpenAdapter", p->lpVtbl->OpenAdapter(p, &IID_IND2Adapter, id, (void **)&r->ad), ND_SUCCESS);
	p->lpVtbl->Release(p);
	CHECK("DllCanUnloadNow with an adapter open", canUnloadNow(), S_FALSE);
	r->info.InfoVersion = ND_VERSION_2;
	cb = sizeof r->info;
	CHECK("Query", r->ad->lpVtbl->Query(r->ad, &r->info, &cb), ND_SUCCESS);
	TRUTH("MS-MPI's capacity checks pass", r->info.MaxCompletionQueueDepth >= 160 && r->info.MaxInitiatorQueueDepth >= SENDQ2 + 16 && r->info.MaxReceiveQueueDepth >= RECVQ2);
	CHECK("CreateOverlappedFile", r->ad->lpVtbl->CreateOverlappedFile(r->ad, &r->file), ND_SUCCESS);
	TRUTH("the file attaches to MS-MPI's port", CreateIoCompletionPort(r->file, port, EX_KEY_ND, 0) == port);
}

static void drain2(Rank2 *r, int *sends, int *recvs, HRESULT st) {
	ND2_RESULT res;
	while (r->cq->lpVtbl->GetResults(r->cq, &res, 1) == 1) {
		CHECK("a completion's status", res.Status, st);
		TRUTH("the queue pair context is the endpoint", res.QueuePairContext == r);
		if (res.RequestType == Nd2RequestTypeSend)
			(*sends)++;
		else if (res.RequestType == Nd2RequestTypeReceive)
			(*recvs)++;
	}
}

void testMsmpiV2(void) {
	section("MS-MPI's ND v2 channel, call by call");
	HANDLE port = CreateIoCompletionPort(INVALID_HANDLE_VALUE, NULL, 0, MAXDWORD);
	Rank2 r0, r1;
	open2rank(&r0, port);
	open2rank(&r1, port);

	/* Rank 0 listens: Bind to port 0, GetLocalAddress writes the port
	 * back, Listen(0); a passive connector, never bound. */
	IND2Listener *l = NULL;
	struct sockaddr_in listenAddr = addrWithPort(0);
	CHECK("CreateListener", r0.ad->lpVtbl->CreateListener(r0.ad, &IID_IND2Listener, r0.file, (void **)&l), ND_SUCCESS);
	CHECK("listener Bind", l->lpVtbl->Bind(l, (struct sockaddr *)&listenAddr, sizeof listenAddr), ND_SUCCESS);
	ULONG cb = sizeof listenAddr;
	CHECK("listener GetLocalAddress", l->lpVtbl->GetLocalAddress(l, (struct sockaddr *)&listenAddr, &cb), ND_INVALID_DEVICE_STATE);
	CHECK("Listen(0)", l->lpVtbl->Listen(l, 0), ND_SUCCESS);
	CHECK("listener GetLocalAddress", l->lpVtbl->GetLocalAddress(l, (struct sockaddr *)&listenAddr, &cb), ND_SUCCESS);
	IND2Connector *passive = NULL;
	ExOv listenOv;
	exInit(&listenOv);
	CHECK("CreateConnector (passive)", r0.ad->lpVtbl->CreateConnector(r0.ad, &IID_IND2Connector, r0.file, (void **)&passive), ND_SUCCESS);
	CHECK("GetConnectionRequest: always pending", l->lpVtbl->GetConnectionRequest(l, (IUnknown *)passive, &listenOv.ov), ND_PENDING);

	/* Rank 1 connects: its connector bound to its adapter's address and
	 * the listener's port (MS-MPI binds every connector so), 28 bytes of
	 * caller data with uninitialised padding, read limits 16. */
	CHECK("CreateConnector (active)", r1.ad->lpVtbl->CreateConnector(r1.ad, &IID_IND2Connector, r1.file, (void **)&r1.conn), ND_SUCCESS);
	CHECK("connector Bind to the listener's port", r1.conn->lpVtbl->Bind(r1.conn, (struct sockaddr *)&listenAddr, sizeof listenAddr), ND_SUCCESS);
	endpoint2(&r1);
	CallerData cd;
	memset(&cd, 0xcc, sizeof cd);
	cd.Version = 0x0A000000;
	cd.Rank = 1;
	cd.Credits = RECVQ2;
	CHECK("Connect with 28 bytes", r1.conn->lpVtbl->Connect(r1.conn, (IUnknown *)r1.qp, (struct sockaddr *)&listenAddr, sizeof listenAddr, 16, 16, &cd, sizeof cd, &r1.connOv.ov), ND_PENDING);

	/* Rank 0: the listener's packet, GetOverlappedResult(FALSE), the
	 * caller's data, its address, the endpoint, Accept with 1 byte, and
	 * the listener re-armed with a new connector. */
	TRUTH("the listener's packet", packet(port, EX_KEY_ND) == &listenOv.ov);
	EXOK(&listenOv);
	CHECK("GetOverlappedResult(listener, FALSE)", l->lpVtbl->GetOverlappedResult(l, &listenOv.ov, FALSE), ND_SUCCESS);
	CallerData got;
	cb = sizeof got;
	HRESULT hr = passive->lpVtbl->GetPrivateData(passive, &got, &cb);
	TRUTH("GetPrivateData(28): ND_SUCCESS with 28 or more, or ND_BUFFER_OVERFLOW", (hr == ND_SUCCESS && cb >= 28) || hr == ND_BUFFER_OVERFLOW);
	TRUTH("the caller data", got.Rank == 1 && got.Credits == RECVQ2 && got.Version == cd.Version);
	struct sockaddr_in peer;
	cb = sizeof peer;
	CHECK("GetPeerAddress before Accept", passive->lpVtbl->GetPeerAddress(passive, (struct sockaddr *)&peer, &cb), ND_SUCCESS);
	CHECK("its length", cb, sizeof(struct sockaddr_in));
	endpoint2(&r0);
	r0.conn = passive;
	UINT8 credits = RECVQ2;
	CHECK("Accept with 1 byte", passive->lpVtbl->Accept(passive, (IUnknown *)r0.qp, 16, 16, &credits, 1, &r0.connOv.ov), ND_PENDING);
	IND2Connector *passive2 = NULL;
	r0.ad->lpVtbl->CreateConnector(r0.ad, &IID_IND2Connector, r0.file, (void **)&passive2);
	CHECK("GetConnectionRequest re-armed", l->lpVtbl->GetConnectionRequest(l, (IUnknown *)passive2, &listenOv.ov), ND_PENDING);

	/* Rank 1: the Connect packet, the credits, CompleteConnect. */
	TRUTH("the Connect packet", packet(port, EX_KEY_ND) == &r1.connOv.ov);
	EXOK(&r1.connOv);
	CHECK("GetOverlappedResult(Connect, FALSE)", r1.conn->lpVtbl->GetOverlappedResult(r1.conn, &r1.connOv.ov, FALSE), ND_SUCCESS);
	UINT8 c1 = 0;
	ULONG len = 1;
	hr = r1.conn->lpVtbl->GetPrivateData(r1.conn, &c1, &len);
	TRUTH("GetPrivateData(1)", (hr == ND_SUCCESS || hr == ND_BUFFER_OVERFLOW) && c1 == RECVQ2);
	CHECK("CompleteConnect", r1.conn->lpVtbl->CompleteConnect(r1.conn, &r1.connOv.ov), ND_PENDING);
	/* The CompleteConnect and Accept packets, in either order. */
	for (int i = 0; i < 2; i++) {
		OVERLAPPED *ov = packet(port, EX_KEY_ND);
		if (ov == &r1.connOv.ov)
			CHECK("GetOverlappedResult(CompleteConnect, FALSE)", r1.conn->lpVtbl->GetOverlappedResult(r1.conn, ov, FALSE), ND_SUCCESS);
		else if (ov == &r0.connOv.ov)
			CHECK("GetOverlappedResult(Accept, FALSE)", passive->lpVtbl->GetOverlappedResult(passive, ov, FALSE), ND_SUCCESS);
		else
			TRUTH("a packet of CompleteConnect or Accept", 0);
	}

	/* Rank 1 sends first: inline below the threshold, then a large one;
	 * rank 0's Receives complete in post order. */
	char *slot = r1.msgs;
	memset(slot, 'm', MSG2);
	ND2_SGE small = {slot, 8 + 16, r1.token};
	ND2_SGE large = {slot, MSG2, r1.token};
	CHECK("Send inline", r1.qp->lpVtbl->Send(r1.qp, NULL, &small, 1, small.BufferLength <= r1.info.InlineRequestThreshold ? ND_OP_FLAG_INLINE : 0), ND_SUCCESS);
	CHECK("Send 8096 bytes", r1.qp->lpVtbl->Send(r1.qp, NULL, &large, 1, 0), ND_SUCCESS);
	int sends = 0, recvs = 0;
	for (int i = 0; i < 100000 && (sends < 2 || recvs < 2); i++) {
		drain2(&r1, &sends, &recvs, ND_SUCCESS);
		drain2(&r0, &sends, &recvs, ND_SUCCESS);
	}
	CHECK("both Sends completed", sends, 2);
	CHECK("both Receives completed", recvs, 2);
	TRUTH("the first Receive holds the inline message", memcmp(r0.msgs + SENDQ2 * MSG2, slot, 24) == 0);

	/* Idle: arm Notify(ANY) on rank 0's queue, through the port. */
	CHECK("Notify(ANY)", r0.cq->lpVtbl->Notify(r0.cq, ND_CQ_NOTIFY_ANY, &r0.notifyOv.ov), ND_PENDING);
	CHECK("Send", r1.qp->lpVtbl->Send(r1.qp, NULL, &large, 1, 0), ND_SUCCESS);
	TRUTH("the Notify packet", packet(port, EX_KEY_ND) == &r0.notifyOv.ov);
	EXOK(&r0.notifyOv);
	CHECK("GetOverlappedResult(Notify, FALSE)", r0.cq->lpVtbl->GetOverlappedResult(r0.cq, &r0.notifyOv.ov, FALSE), ND_SUCCESS);

	/* Zero copy: the sender registers its page-rounded buffer for remote
	 * reads; the receiver reads it with the region's remote token. */
	char *user = VirtualAlloc(NULL, 1 << 20, MEM_COMMIT | MEM_RESERVE, PAGE_READWRITE);
	char *dst = VirtualAlloc(NULL, 1 << 20, MEM_COMMIT | MEM_RESERVE, PAGE_READWRITE);
	for (int i = 0; i < 1 << 20; i++)
		user[i] = (char)(i * 7);
	IND2MemoryRegion *smr = NULL, *dmr = NULL;
	r1.ad->lpVtbl->CreateMemoryRegion(r1.ad, &IID_IND2MemoryRegion, r1.file, (void **)&smr);
	r0.ad->lpVtbl->CreateMemoryRegion(r0.ad, &IID_IND2MemoryRegion, r0.file, (void **)&dmr);
	CHECK("Register the sender's buffer", registerSync2(smr, user, 1 << 20, ND_MR_FLAG_ALLOW_LOCAL_WRITE | ND_MR_FLAG_ALLOW_REMOTE_READ), ND_SUCCESS);
	CHECK("Register the receiver's buffer", registerSync2(dmr, dst, 1 << 20, ND_MR_FLAG_ALLOW_LOCAL_WRITE | ND_MR_FLAG_ALLOW_REMOTE_READ), ND_SUCCESS);
	UINT32 remote = smr->lpVtbl->GetRemoteToken(smr);
	for (int i = 0; i < 16; i++) {
		ND2_SGE sge = {dst + i * 65536, 65536, dmr->lpVtbl->GetLocalToken(dmr)};
		CHECK("Read (exactly ND_SUCCESS)", r0.qp->lpVtbl->Read(r0.qp, dmr, &sge, 1, (UINT64)(uintptr_t)user + i * 65536, remote, 0), ND_SUCCESS);
	}
	int reads = 0;
	ND2_RESULT res;
	for (int i = 0; i < 1000000 && reads < 17; i++) {
		while (r0.cq->lpVtbl->GetResults(r0.cq, &res, 1) == 1) {
			CHECK("completion", res.Status, ND_SUCCESS);
			reads++; /* the Receive of the last Send, then 16 Reads */
		}
	}
	CHECK("the Reads (and the Receive) completed", reads, 17);
	TRUTH("the bytes read", memcmp(user, dst, 1 << 20) == 0);
	while (r1.cq->lpVtbl->GetResults(r1.cq, &res, 1) == 1)
		;
	CHECK("Deregister", deregisterSync2(smr), ND_SUCCESS);
	CHECK("Deregister", deregisterSync2(dmr), ND_SUCCESS);
	smr->lpVtbl->Release(smr);
	dmr->lpVtbl->Release(dmr);
	VirtualFree(user, 0, MEM_RELEASE);
	VirtualFree(dst, 0, MEM_RELEASE);

	/* Teardown: both Disconnect with nothing outstanding but Receives;
	 * every Receive comes back ND_CANCELED; the Disconnect packets
	 * succeed (the later one after the peer's). */
	CHECK("Disconnect (rank 1)", r1.conn->lpVtbl->Disconnect(r1.conn, &r1.connOv.ov), ND_PENDING);
	CHECK("Disconnect (rank 0)", passive->lpVtbl->Disconnect(passive, &r0.connOv.ov), ND_PENDING);
	for (int i = 0; i < 2; i++) {
		OVERLAPPED *ov = packet(port, EX_KEY_ND);
		IND2Connector *c = ov == &r1.connOv.ov ? r1.conn : passive;
		CHECK("GetOverlappedResult(Disconnect, FALSE): a failure is fatal to MS-MPI", c->lpVtbl->GetOverlappedResult(c, ov, FALSE), ND_SUCCESS);
	}
	sends = recvs = 0;
	for (int i = 0; i < 100000 && recvs < 2 * RECVQ2 - 3; i++) {
		drain2(&r0, &sends, &recvs, ND_CANCELED);
		drain2(&r1, &sends, &recvs, ND_CANCELED);
	}
	CHECK("every Receive flushed ND_CANCELED", recvs, 2 * RECVQ2 - 3);

	/* MS-MPI's releases: region (deregistered), queue before queue pair,
	 * queue pair, connector; at shutdown the listener's request canceled,
	 * the file closed before the adapter is released. */
	Rank2 *ranks[2] = {&r0, &r1};
	for (int i = 0; i < 2; i++) {
		Rank2 *r = ranks[i];
		CHECK("Deregister", deregisterSync2(r->mr), ND_SUCCESS);
		r->mr->lpVtbl->Release(r->mr);
		r->cq->lpVtbl->Release(r->cq);
		r->qp->lpVtbl->Release(r->qp);
		r->conn->lpVtbl->Release(r->conn);
	}
	CHECK("CancelOverlappedRequests (listener)", l->lpVtbl->CancelOverlappedRequests(l), ND_SUCCESS);
	TRUTH("the canceled request's packet", packet(port, EX_KEY_ND) == &listenOv.ov);
	l->lpVtbl->Release(l);
	for (int i = 0; i < 2; i++) {
		CloseHandle(ranks[i]->file);
		ranks[i]->ad->lpVtbl->Release(ranks[i]->ad);
		free(ranks[i]->msgs - 8);
	}
	passive2->lpVtbl->Release(passive2);
	CloseHandle(port);
}

/* Rank1 is one MS-MPI rank's ND v1 endpoint (CEndpoint::Init). */
typedef struct Result1 {
	ND_RESULT r; /* MS-MPI's ND_RESULT, then its callbacks and endpoint */
	void *succeeded, *failed, *ep;
} Result1;

typedef struct Rank1 {
	INDAdapter *ad;
	INDCompletionQueue *cq;
	INDConnector *conn;
	INDEndpoint *ep;
	ND_MR_HANDLE mr;
	ExOv connOv, notifyOv;
	char msgs[(16 + RECVQ1) * MSG1];
	Result1 recv[RECVQ1], send[16];
} Rank1;

static HRESULT registerSync1(INDAdapter *ad, void *buf, SIZE_T len, ND_MR_HANDLE *h) {
	OVERLAPPED ov = {0};
	HANDLE ev = CreateEventA(NULL, FALSE, FALSE, NULL);
	ov.hEvent = (HANDLE)((ULONG_PTR)ev | 1);
	ov.Internal = ND_PENDING;
	HRESULT hr = ad->lpVtbl->RegisterMemory(ad, buf, len, &ov, h);
	if (hr == ND_PENDING) {
		SIZE_T b;
		hr = ad->lpVtbl->GetOverlappedResult(ad, &ov, &b, TRUE);
	}
	CloseHandle(ev);
	return hr;
}

static HRESULT deregisterSync1(INDAdapter *ad, ND_MR_HANDLE h) {
	OVERLAPPED ov = {0};
	HANDLE ev = CreateEventA(NULL, FALSE, FALSE, NULL);
	ov.hEvent = (HANDLE)((ULONG_PTR)ev | 1);
	ov.Internal = ND_PENDING;
	HRESULT hr = ad->lpVtbl->DeregisterMemory(ad, h, &ov);
	if (hr == ND_PENDING) {
		SIZE_T b;
		hr = ad->lpVtbl->GetOverlappedResult(ad, &ov, &b, TRUE);
	}
	CloseHandle(ev);
	return hr;
}

static void endpoint1(Rank1 *r, SIZE_T ird, SIZE_T ord) {
	CHECK("CreateCompletionQueue", r->ad->lpVtbl->CreateCompletionQueue(r->ad, 128, &r->cq), ND_SUCCESS);
	CHECK("CreateEndpoint", r->conn->lpVtbl->CreateEndpoint(r->conn, r->cq, r->cq, RECVQ1, RECVQ1, 1, 1, ird, ord, NULL, &r->ep), ND_SUCCESS);
	CHECK("RegisterMemory (synchronous)", registerSync1(r->ad, r->msgs, sizeof r->msgs, &r->mr), ND_SUCCESS);
	r->ep->lpVtbl->StartRequestBatch(r->ep);
	for (int i = 0; i < RECVQ1; i++) {
		ND_SGE sge = {r->msgs + (16 + i) * MSG1, MSG1, r->mr};
		r->recv[i].succeeded = r->recv[i].failed = r->recv[i].ep = &sentinel;
		CHECK("Receive", r->ep->lpVtbl->Receive(r->ep, &r->recv[i].r, &sge, 1), ND_SUCCESS);
	}
	r->ep->lpVtbl->SubmitRequestBatch(r->ep);
	exInit(&r->connOv);
	exInit(&r->notifyOv);
}

/* succeededInternal is what MS-MPI's v1 dispatch reads. */
static int succeededInternal(OVERLAPPED *ov) { return (LONG)ov->Internal >= 0; }

void testMsmpiV1(void) {
	section("MS-MPI's ND v1 channel, call by call");
	HANDLE port = CreateIoCompletionPort(INVALID_HANDLE_VALUE, NULL, 0, MAXDWORD);
	static Rank1 r0, r1;
	memset(&r0, 0, sizeof r0);
	memset(&r1, 0, sizeof r1);
	Rank1 *ranks[2] = {&r0, &r1};
	for (int i = 0; i < 2; i++) {
		INDProvider *p = provider1();
		SIZE_T cb = 0;
		CHECK("QueryAddressList probe", p->lpVtbl->QueryAddressList(p, NULL, &cb), ND_BUFFER_OVERFLOW);
		CHECK("OpenAdapter", p->lpVtbl->OpenAdapter(p, (struct sockaddr *)&localAddr, sizeof localAddr, &ranks[i]->ad), ND_SUCCESS);
		p->lpVtbl->Release(p);
		ND_ADAPTER_INFO1 info;
		cb = sizeof info;
		CHECK("Query(1)", ranks[i]->ad->lpVtbl->Query(ranks[i]->ad, 1, &info, &cb), ND_SUCCESS);
		TRUTH("MaxCqEntries >= 128", info.MaxCqEntries >= 128);
		TRUTH("the adapter's file attaches to MS-MPI's port (key 0)", CreateIoCompletionPort(ranks[i]->ad->lpVtbl->GetFileHandle(ranks[i]->ad), port, 0, 0) == port);
	}
	/* Rank 0 listens on protocol 123, the port written into its address. */
	INDListen *l = NULL;
	struct sockaddr_in addr = addrWithPort(0);
	CHECK("Listen(0, 123, 0)", r0.ad->lpVtbl->Listen(r0.ad, 0, 123, 0, &addr.sin_port, &l), ND_SUCCESS);
	INDConnector *passive = NULL;
	ExOv listenOv;
	exInit(&listenOv);
	r0.ad->lpVtbl->CreateConnector(r0.ad, &passive);
	CHECK("GetConnectionRequest", l->lpVtbl->GetConnectionRequest(l, passive, &listenOv.ov), ND_PENDING);

	/* Rank 1 connects with protocol 123, LocalPort 0, 28 bytes. */
	r1.ad->lpVtbl->CreateConnector(r1.ad, &r1.conn);
	endpoint1(&r1, 16, 16);
	CallerData cd;
	memset(&cd, 0xcc, sizeof cd);
	cd.Rank = 1;
	cd.Credits = RECVQ1;
	CHECK("Connect(123)", r1.conn->lpVtbl->Connect(r1.conn, r1.ep, (struct sockaddr *)&addr, sizeof addr, 123, 0, &cd, sizeof cd, &r1.connOv.ov), ND_PENDING);

	/* Rank 0: the listener's packet, dispatched on Internal. */
	OVERLAPPED *ov = packet(port, 0);
	TRUTH("the listener's packet", ov == &listenOv.ov && succeededInternal(ov));
	EXOK(&listenOv);
	SIZE_T inRL = 0, outRL = 0, len = sizeof(CallerData);
	CallerData got;
	HRESULT hr = passive->lpVtbl->GetConnectionData(passive, &inRL, &outRL, &got, &len);
	TRUTH("GetConnectionData(28)", (hr == ND_SUCCESS || hr == ND_BUFFER_OVERFLOW) && len >= 28 && got.Rank == 1);
	struct sockaddr_in peer;
	len = sizeof peer;
	CHECK("GetPeerAddress before Accept", passive->lpVtbl->GetPeerAddress(passive, (struct sockaddr *)&peer, &len), ND_SUCCESS);
	r0.conn = passive;
	endpoint1(&r0, inRL < 16 ? inRL : 16, outRL < 16 ? outRL : 16);
	UINT8 credits = RECVQ1;
	CHECK("Accept with 1 byte", passive->lpVtbl->Accept(passive, r0.ep, &credits, 1, &r0.connOv.ov), ND_PENDING);
	INDConnector *passive2 = NULL;
	r0.ad->lpVtbl->CreateConnector(r0.ad, &passive2);
	CHECK("GetConnectionRequest re-armed", l->lpVtbl->GetConnectionRequest(l, passive2, &listenOv.ov), ND_PENDING);

	/* Rank 1: the Connect packet (success class: accepted unless
	 * ND_TIMEOUT), the credits, CompleteConnect (success packet: no
	 * GetOverlappedResult). */
	ov = packet(port, 0);
	TRUTH("the Connect packet, of the success class", ov == &r1.connOv.ov && succeededInternal(ov));
	SIZE_T b;
	CHECK("GetOverlappedResult(Connect)", r1.conn->lpVtbl->GetOverlappedResult(r1.conn, ov, &b, FALSE), ND_SUCCESS);
	UINT8 c1 = 0;
	len = 1;
	hr = r1.conn->lpVtbl->GetConnectionData(r1.conn, NULL, NULL, &c1, &len);
	TRUTH("GetConnectionData(1)", (hr == ND_SUCCESS || hr == ND_BUFFER_OVERFLOW) && c1 == RECVQ1);
	CHECK("CompleteConnect", r1.conn->lpVtbl->CompleteConnect(r1.conn, &r1.connOv.ov), ND_PENDING);
	for (int i = 0; i < 2; i++) {
		ov = packet(port, 0);
		TRUTH("CompleteConnect and Accept packets, of the success class", (ov == &r1.connOv.ov || ov == &r0.connOv.ov) && succeededInternal(ov));
	}
	CHECK("GetOverlappedResult(Accept) is not ND_TIMEOUT", passive->lpVtbl->GetOverlappedResult(passive, &r0.connOv.ov, &b, FALSE), ND_SUCCESS);

	/* Sends, always READ_FENCE; rank 0's Receives by pointer identity. */
	char *slot = r1.msgs;
	memset(slot, 's', MSG1);
	ND_SGE sge = {slot, MSG1, r1.mr};
	for (int i = 0; i < 4; i++) {
		r1.send[i].succeeded = r1.send[i].failed = r1.send[i].ep = &sentinel;
		CHECK("Send (READ_FENCE)", r1.ep->lpVtbl->Send(r1.ep, &r1.send[i].r, &sge, 1, ND_OP_FLAG_READ_FENCE), ND_SUCCESS);
	}
	int sends = 0, recvs = 0;
	ND_RESULT *res;
	for (int i = 0; i < 100000 && (sends < 4 || recvs < 4); i++) {
		if (r1.cq->lpVtbl->GetResults(r1.cq, &res, 1) == 1) {
			TRUTH("the Send's own ND_RESULT, in order", res == &r1.send[sends].r && res->Status == ND_SUCCESS);
			sends++;
		}
		if (r0.cq->lpVtbl->GetResults(r0.cq, &res, 1) == 1) {
			TRUTH("the Receive's own ND_RESULT, in order", res == &r0.recv[recvs].r && res->Status == ND_SUCCESS && res->BytesTransferred == MSG1);
			recvs++;
		}
	}
	CHECK("Sends", sends, 4);
	CHECK("Receives", recvs, 4);
	TRUTH("nothing written after the ND_RESULTs", r0.recv[0].succeeded == &sentinel && r1.send[0].ep == &sentinel);

	/* Zero copy: the sender binds a window over its registered buffer,
	 * the descriptor goes straight into the message it sends; the
	 * receiver reads through it and reposts that Receive before the
	 * Read completes; then the sender's Invalidate, with the window's
	 * own invalidate ND_RESULT. */
	char *user = VirtualAlloc(NULL, 1 << 18, MEM_COMMIT | MEM_RESERVE, PAGE_READWRITE);
	char *dst = VirtualAlloc(NULL, 1 << 18, MEM_COMMIT | MEM_RESERVE, PAGE_READWRITE);
	for (int i = 0; i < 1 << 18; i++)
		user[i] = (char)(i * 13);
	ND_MR_HANDLE smr, dmr;
	CHECK("RegisterMemory (sender)", registerSync1(r1.ad, user, 1 << 18, &smr), ND_SUCCESS);
	CHECK("RegisterMemory (receiver)", registerSync1(r0.ad, dst, 1 << 18, &dmr), ND_SUCCESS);
	Result1 invalidate = {{ND_PENDING, 0}, &sentinel, &sentinel, &sentinel}, bind;
	INDMemoryWindow *mw = NULL;
	CHECK("CreateMemoryWindow", r1.ad->lpVtbl->CreateMemoryWindow(r1.ad, &invalidate.r, &mw), ND_SUCCESS);
	ND_MW_DESCRIPTOR *inMsg = (ND_MW_DESCRIPTOR *)(slot + 8);
	CHECK("Bind, the descriptor into the message", r1.ep->lpVtbl->Bind(r1.ep, &bind.r, smr, mw, user, 1 << 18, ND_OP_FLAG_ALLOW_READ, inMsg), ND_SUCCESS);
	ND_SGE msg = {slot, 64, r1.mr};
	CHECK("Send the descriptor", r1.ep->lpVtbl->Send(r1.ep, &r1.send[4].r, &msg, 1, ND_OP_FLAG_READ_FENCE), ND_SUCCESS);
	for (int i = 0; i < 100000 && r0.cq->lpVtbl->GetResults(r0.cq, &res, 1) == 0; i++)
		;
	TRUTH("the descriptor's message arrived", res == &r0.recv[4].r && res->Status == ND_SUCCESS);
	ND_MW_DESCRIPTOR *desc = (ND_MW_DESCRIPTOR *)(r0.msgs + (16 + 4) * MSG1 + 8);
	ND_RESULT reads[4];
	for (int i = 0; i < 4; i++) {
		ND_SGE d = {dst + i * 65536, 65536, dmr};
		CHECK("Read (exactly ND_SUCCESS)", r0.ep->lpVtbl->Read(r0.ep, &reads[i], &d, 1, desc, (ULONGLONG)i * 65536, 0), ND_SUCCESS);
	}
	/* Reposted (and overwritten) before the Reads complete. */
	ND_SGE again = {r0.msgs + (16 + 4) * MSG1, MSG1, r0.mr};
	memset(r0.msgs + (16 + 4) * MSG1, 0, 64);
	CHECK("Receive reposted", r0.ep->lpVtbl->Receive(r0.ep, &r0.recv[4].r, &again, 1), ND_SUCCESS);
	int done = 0;
	for (int i = 0; i < 1000000 && done < 4; i++)
		if (r0.cq->lpVtbl->GetResults(r0.cq, &res, 1) == 1) {
			TRUTH("a Read's result, in order", res == &reads[done] && res->Status == ND_SUCCESS);
			done++;
		}
	CHECK("Reads", done, 4);
	TRUTH("the bytes read through the window", memcmp(user, dst, 1 << 18) == 0);
	CHECK("Invalidate with the window's invalidate result", r1.ep->lpVtbl->Invalidate(r1.ep, &invalidate.r, mw, 0), ND_SUCCESS);
	int got1 = 0, inv = 0;
	for (int i = 0; i < 100000 && got1 < 3; i++)
		if (r1.cq->lpVtbl->GetResults(r1.cq, &res, 1) == 1) {
			got1++; /* the Bind, the Send, the Invalidate */
			inv += res == &invalidate.r;
		}
	CHECK("the Bind, Send and Invalidate completed", got1, 3);
	CHECK("the invalidate ND_RESULT came back once, from the Invalidate", inv, 1);
	CHECK("its status", invalidate.r.Status, ND_SUCCESS);
	mw->lpVtbl->Release(mw);
	CHECK("DeregisterMemory", deregisterSync1(r1.ad, smr), ND_SUCCESS);
	CHECK("DeregisterMemory", deregisterSync1(r0.ad, dmr), ND_SUCCESS);
	VirtualFree(user, 0, MEM_RELEASE);
	VirtualFree(dst, 0, MEM_RELEASE);

	/* Notify armed; a Send fires it (success packet: no
	 * GetOverlappedResult). */
	CHECK("Notify(ANY)", r0.cq->lpVtbl->Notify(r0.cq, ND_CQ_NOTIFY_ANY, &r0.notifyOv.ov), ND_PENDING);
	CHECK("Send", r1.ep->lpVtbl->Send(r1.ep, &r1.send[5].r, &sge, 1, ND_OP_FLAG_READ_FENCE), ND_SUCCESS);
	ov = packet(port, 0);
	TRUTH("the Notify packet, of the success class", ov == &r0.notifyOv.ov && succeededInternal(ov));
	EXOK(&r0.notifyOv);
	/* The poll after the notification: the last Send and its Receive. */
	int last = 0;
	for (int i = 0; i < 1000000 && last < 2; i++) {
		if (r0.cq->lpVtbl->GetResults(r0.cq, &res, 1) == 1)
			last += res == &r0.recv[5].r && res->Status == ND_SUCCESS;
		if (r1.cq->lpVtbl->GetResults(r1.cq, &res, 1) == 1)
			last += res == &r1.send[5].r && res->Status == ND_SUCCESS;
	}
	CHECK("the last Send and its Receive", last, 2);

	/* Teardown: Disconnect both; packets of the success class; every
	 * Receive flushed; DeregisterMemory; the armed queue and the
	 * listener canceled; releases. */
	CHECK("Disconnect", r1.conn->lpVtbl->Disconnect(r1.conn, &r1.connOv.ov), ND_PENDING);
	CHECK("Disconnect", passive->lpVtbl->Disconnect(passive, &r0.connOv.ov), ND_PENDING);
	for (int i = 0; i < 2; i++) {
		ov = packet(port, 0);
		TRUTH("a Disconnect packet of the success class", (ov == &r1.connOv.ov || ov == &r0.connOv.ov) && succeededInternal(ov));
	}
	int flushed = 0;
	for (int i = 0; i < 100000 && flushed < 2 * RECVQ1 - 5; i++) {
		for (int k = 0; k < 2; k++)
			while (ranks[k]->cq->lpVtbl->GetResults(ranks[k]->cq, &res, 1) == 1)
				flushed += res->Status == ND_CANCELED;
	}
	CHECK("the Receives flushed ND_CANCELED", flushed, 2 * RECVQ1 - 5);
	CHECK("Notify(ANY) to be canceled at shutdown", r1.cq->lpVtbl->Notify(r1.cq, ND_CQ_NOTIFY_ANY, &r1.notifyOv.ov), ND_PENDING);
	r1.cq->lpVtbl->CancelOverlappedRequests(r1.cq);
	ov = packet(port, 0);
	TRUTH("the canceled Notify, of the failure class", ov == &r1.notifyOv.ov && !succeededInternal(ov));
	CHECK("GetOverlappedResult on the failure path", r1.cq->lpVtbl->GetOverlappedResult(r1.cq, ov, &b, FALSE), ND_CANCELED);
	for (int i = 0; i < 2; i++) {
		CHECK("DeregisterMemory", deregisterSync1(ranks[i]->ad, ranks[i]->mr), ND_SUCCESS);
		ranks[i]->cq->lpVtbl->Release(ranks[i]->cq);
		ranks[i]->ep->lpVtbl->Release(ranks[i]->ep);
		ranks[i]->conn->lpVtbl->Release(ranks[i]->conn);
	}
	CHECK("CancelOverlappedRequests (listener)", l->lpVtbl->CancelOverlappedRequests(l), ND_SUCCESS);
	ov = packet(port, 0);
	TRUTH("the canceled listener request, of the failure class", ov == &listenOv.ov && !succeededInternal(ov));
	l->lpVtbl->Release(l);
	passive2->lpVtbl->Release(passive2);
	for (int i = 0; i < 2; i++) {
		CHECK("CancelOverlappedRequests (adapter)", ranks[i]->ad->lpVtbl->CancelOverlappedRequests(ranks[i]->ad), ND_SUCCESS);
		ranks[i]->ad->lpVtbl->Release(ranks[i]->ad);
	}
	CloseHandle(port);
}
