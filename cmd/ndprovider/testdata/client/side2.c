/* side2.c: one side of an ND v2 connection and its helpers. */
#include "side2.h"

IND2Provider *provider2(void) {
	IND2Provider *p = NULL;
	HRESULT hr = getClassObject(&providerClass, &IID_IND2Provider, (void **)&p);
	CHECK("DllGetClassObject(IND2Provider)", hr, ND_SUCCESS);
	return p;
}

void open2(Side2 *s, size_t len) {
	memset(s, 0, sizeof *s);
	IND2Provider *p = provider2();
	UINT64 id = 0;
	CHECK("ResolveAddress", p->lpVtbl->ResolveAddress(p, (struct sockaddr *)&localAddr, sizeof localAddr, &id), ND_SUCCESS);
	CHECK("OpenAdapter", p->lpVtbl->OpenAdapter(p, &IID_IND2Adapter, id, (void **)&s->ad), ND_SUCCESS);
	p->lpVtbl->Release(p); /* the adapter lives on without its provider */
	CHECK("CreateOverlappedFile", s->ad->lpVtbl->CreateOverlappedFile(s->ad, &s->file), ND_SUCCESS);
	s->port = CreateIoCompletionPort(s->file, NULL, KEY2, 0);
	TRUTH("CreateIoCompletionPort on the overlapped file", s->port != NULL);
	s->event = CreateEventA(NULL, FALSE, FALSE, NULL);
	CHECK("CreateCompletionQueue", s->ad->lpVtbl->CreateCompletionQueue(s->ad, &IID_IND2CompletionQueue, s->file, 256, 0, 0, (void **)&s->cq), ND_SUCCESS);
	CHECK("CreateQueuePair", s->ad->lpVtbl->CreateQueuePair(s->ad, &IID_IND2QueuePair, (IUnknown *)s->cq, (IUnknown *)s->cq, (void *)QP_CONTEXT, 64, 64, 4, 4, 128, (void **)&s->qp), ND_SUCCESS);
	CHECK("CreateMemoryRegion", s->ad->lpVtbl->CreateMemoryRegion(s->ad, &IID_IND2MemoryRegion, s->file, (void **)&s->mr), ND_SUCCESS);
	s->len = len;
	s->buf = VirtualAlloc(NULL, len, MEM_COMMIT | MEM_RESERVE, PAGE_READWRITE);
	OVERLAPPED ov = {0};
	ov.hEvent = s->event;
	HRESULT hr = s->mr->lpVtbl->Register(s->mr, s->buf, len, ND_MR_FLAG_ALLOW_LOCAL_WRITE | ND_MR_FLAG_ALLOW_REMOTE_READ | ND_MR_FLAG_ALLOW_REMOTE_WRITE, &ov);
	CHECK("Register", hr, ND_PENDING);
	CHECK("Register's completion", wait2(s->mr, &ov, hr), ND_SUCCESS);
	expectPacket2(s, &ov, ND_SUCCESS);
	s->token = s->mr->lpVtbl->GetLocalToken(s->mr);
	CHECK("CreateConnector", s->ad->lpVtbl->CreateConnector(s->ad, &IID_IND2Connector, s->file, (void **)&s->conn), ND_SUCCESS);
}

void close2(Side2 *s) {
	if (s->conn)
		s->conn->lpVtbl->Release(s->conn);
	if (s->qp)
		s->qp->lpVtbl->Release(s->qp);
	if (s->mr) {
		OVERLAPPED ov = {0};
		ov.hEvent = (HANDLE)((ULONG_PTR)s->event | 1); /* no packet, as MS-MPI deregisters */
		HRESULT hr = s->mr->lpVtbl->Deregister(s->mr, &ov);
		wait2(s->mr, &ov, hr);
		s->mr->lpVtbl->Release(s->mr);
	}
	if (s->cq)
		s->cq->lpVtbl->Release(s->cq);
	if (s->ad)
		s->ad->lpVtbl->Release(s->ad);
	if (s->file)
		CloseHandle(s->file); /* the consumer's to close; the provider keeps its own side */
	CloseHandle(s->port);
	CloseHandle(s->event);
	VirtualFree(s->buf, 0, MEM_RELEASE);
	memset(s, 0, sizeof *s);
}

ND2_SGE sge2(Side2 *s, size_t off, ULONG n) {
	ND2_SGE e = {s->buf + off, n, s->token};
	return e;
}

void expectPacket2(Side2 *s, OVERLAPPED *ov, HRESULT st) {
	DWORD bytes;
	ULONG_PTR key = 0;
	OVERLAPPED *got = NULL;
	BOOL ok = GetQueuedCompletionStatus(s->port, &bytes, &key, &got, 10000);
	TRUTH("a completion packet arrived", got != NULL);
	TRUTH("the packet carries the request's OVERLAPPED", got == ov);
	TRUTH("the packet carries the file's key", key == KEY2);
	TRUTH("the packet's class is the status's (SUCCEEDED / FAILED)", (ok != 0) == (st >= 0));
	if (!ok && got != NULL)
		TRUTH("a failed packet says ERROR_OPERATION_ABORTED", GetLastError() == ERROR_OPERATION_ABORTED);
}

void noPacket2(Side2 *s) {
	DWORD bytes;
	ULONG_PTR key;
	OVERLAPPED *got = NULL;
	GetQueuedCompletionStatus(s->port, &bytes, &key, &got, 0);
	TRUTH("no completion packet", got == NULL);
}

ND2_RESULT reap2(Side2 *s) {
	ND2_RESULT r;
	memset(&r, 0, sizeof r);
	for (int i = 0; i < 10000; i++) {
		if (s->cq->lpVtbl->GetResults(s->cq, &r, 1) == 1)
			return r;
		OVERLAPPED ov = {0};
		ov.hEvent = s->event;
		HRESULT hr = s->cq->lpVtbl->Notify(s->cq, ND_CQ_NOTIFY_ANY, &ov);
		if (hr != ND_PENDING) {
			CHECK("Notify", hr, ND_PENDING);
			break;
		}
		if (s->cq->lpVtbl->GetResults(s->cq, &r, 1) == 1) {
			s->cq->lpVtbl->CancelOverlappedRequests(s->cq);
			hr = s->cq->lpVtbl->GetOverlappedResult(s->cq, &ov, FALSE);
			TRUTH("a canceled Notify says ND_CANCELED, or ND_SUCCESS if it fired first", hr == ND_CANCELED || hr == ND_SUCCESS);
			expectPacket2(s, &ov, hr);
			return r;
		}
		hr = s->cq->lpVtbl->GetOverlappedResult(s->cq, &ov, TRUE);
		CHECK("Notify's completion", hr, ND_SUCCESS);
		expectPacket2(s, &ov, hr);
	}
	CHECK("a completion arrived", 0, 1);
	return r;
}

void expect2(Side2 *s, void *ctx, ND2_REQUEST_TYPE typ, HRESULT st, ULONG bytes) {
	ND2_RESULT r = reap2(s);
	CHECK("the completion's status", r.Status, st);
	TRUTH("the completion's request context", r.RequestContext == ctx);
	CHECK("the completion's request type", r.RequestType, typ);
	TRUTH("the completion's queue pair context", r.QueuePairContext == (void *)QP_CONTEXT);
	if (typ == Nd2RequestTypeReceive && st == ND_SUCCESS)
		CHECK("the Receive's bytes", r.BytesTransferred, bytes);
}

IND2Listener *listen2(Side2 *s, struct sockaddr_in *bound) {
	IND2Listener *l = NULL;
	CHECK("CreateListener", s->ad->lpVtbl->CreateListener(s->ad, &IID_IND2Listener, s->file, (void **)&l), ND_SUCCESS);
	struct sockaddr_in a = addrWithPort(0);
	CHECK("listener Bind", l->lpVtbl->Bind(l, (struct sockaddr *)&a, sizeof a), ND_SUCCESS);
	CHECK("Listen", l->lpVtbl->Listen(l, 0), ND_SUCCESS);
	ULONG n = sizeof *bound;
	CHECK("listener GetLocalAddress", l->lpVtbl->GetLocalAddress(l, (struct sockaddr *)bound, &n), ND_SUCCESS);
	CHECK("listener address length", n, sizeof *bound);
	TRUTH("a port was assigned", bound->sin_port != 0);
	return l;
}

void connect2(Side2 *srv, Side2 *cli, IND2Listener *l, struct sockaddr_in *dest, IND2Connector *passive) {
	OVERLAPPED lov = {0}, cov = {0}, aov = {0};
	HRESULT hr = l->lpVtbl->GetConnectionRequest(l, (IUnknown *)passive, &lov);
	CHECK("GetConnectionRequest", hr, ND_PENDING);
	hr = cli->conn->lpVtbl->Connect(cli->conn, (IUnknown *)cli->qp, (struct sockaddr *)dest, sizeof *dest, 8, 8, "connect", 7, &cov);
	CHECK("Connect", hr, ND_PENDING);
	expectPacket2(srv, &lov, ND_SUCCESS);
	CHECK("GetConnectionRequest's result", l->lpVtbl->GetOverlappedResult(l, &lov, FALSE), ND_SUCCESS);
	hr = passive->lpVtbl->Accept(passive, (IUnknown *)srv->qp, 8, 8, "ok", 2, &aov);
	CHECK("Accept", hr, ND_PENDING);
	expectPacket2(cli, &cov, ND_SUCCESS);
	CHECK("Connect's result", cli->conn->lpVtbl->GetOverlappedResult(cli->conn, &cov, FALSE), ND_SUCCESS);
	hr = cli->conn->lpVtbl->CompleteConnect(cli->conn, &cov);
	CHECK("CompleteConnect", hr, ND_PENDING);
	expectPacket2(cli, &cov, ND_SUCCESS);
	CHECK("CompleteConnect's result", cli->conn->lpVtbl->GetOverlappedResult(cli->conn, &cov, FALSE), ND_SUCCESS);
	expectPacket2(srv, &aov, ND_SUCCESS);
	CHECK("Accept's result", passive->lpVtbl->GetOverlappedResult(passive, &aov, FALSE), ND_SUCCESS);
}
