/* side1.c: one side of an ND v1 connection and its helpers. */
#include "side1.h"

INDProvider *provider1(void) {
	IClassFactory *f = NULL;
	INDProvider *p = NULL;
	CHECK("DllGetClassObject(IClassFactory)", getClassObject(&providerClass, &IID_IClassFactory, (void **)&f), ND_SUCCESS);
	if (f == NULL)
		return NULL;
	CHECK("CreateInstance(INDProvider)", f->lpVtbl->CreateInstance(f, NULL, &IID_INDProvider, (void **)&p), S_OK);
	f->lpVtbl->Release(f);
	return p;
}

void open1(Side1 *s, size_t len) {
	memset(s, 0, sizeof *s);
	INDProvider *p = provider1();
	CHECK("OpenAdapter", p->lpVtbl->OpenAdapter(p, (struct sockaddr *)&localAddr, sizeof localAddr, &s->ad), ND_SUCCESS);
	p->lpVtbl->Release(p);
	HANDLE file = s->ad->lpVtbl->GetFileHandle(s->ad);
	TRUTH("GetFileHandle", file != INVALID_HANDLE_VALUE && file != NULL);
	s->port = CreateIoCompletionPort(file, NULL, KEY1, 0);
	TRUTH("CreateIoCompletionPort on the adapter's file", s->port != NULL);
	s->event = CreateEventA(NULL, FALSE, FALSE, NULL);
	CHECK("CreateCompletionQueue", s->ad->lpVtbl->CreateCompletionQueue(s->ad, 256, &s->cq), ND_SUCCESS);
	s->len = len;
	s->buf = VirtualAlloc(NULL, len, MEM_COMMIT | MEM_RESERVE, PAGE_READWRITE);
	OVERLAPPED ov = {0};
	ov.hEvent = s->event;
	HRESULT hr = s->ad->lpVtbl->RegisterMemory(s->ad, s->buf, len, &ov, &s->mr);
	CHECK("RegisterMemory", hr, ND_PENDING);
	TRUTH("the memory handle is there as RegisterMemory returns", s->mr != NULL);
	CHECK("RegisterMemory's completion", wait1(s->ad, &ov, hr), ND_SUCCESS);
	expectPacket1(s, &ov, ND_SUCCESS);
	CHECK("CreateConnector", s->ad->lpVtbl->CreateConnector(s->ad, &s->conn), ND_SUCCESS);
	SIZE_T inl = 0;
	CHECK("CreateEndpoint", s->conn->lpVtbl->CreateEndpoint(s->conn, s->cq, s->cq, 32, 32, 4, 4, 4, 4, &inl, &s->ep), ND_SUCCESS);
	TRUTH("inline data granted", inl > 0);
}

void close1(Side1 *s) {
	if (s->ep)
		s->ep->lpVtbl->Release(s->ep);
	if (s->conn)
		s->conn->lpVtbl->Release(s->conn);
	if (s->mr) {
		OVERLAPPED ov = {0};
		ov.hEvent = (HANDLE)((ULONG_PTR)s->event | 1); /* synchronous, no packet: MS-MPI's way */
		HRESULT hr = s->ad->lpVtbl->DeregisterMemory(s->ad, s->mr, &ov);
		wait1(s->ad, &ov, hr);
	}
	if (s->cq)
		s->cq->lpVtbl->Release(s->cq);
	if (s->ad)
		s->ad->lpVtbl->Release(s->ad);
	CloseHandle(s->port);
	CloseHandle(s->event);
	VirtualFree(s->buf, 0, MEM_RELEASE);
	memset(s, 0, sizeof *s);
}

ND_SGE sge1(Side1 *s, size_t off, SIZE_T n) {
	ND_SGE e = {s->buf + off, n, s->mr};
	return e;
}

void expectPacket1(Side1 *s, OVERLAPPED *ov, HRESULT st) {
	DWORD bytes;
	ULONG_PTR key = 0;
	OVERLAPPED *got = NULL;
	BOOL ok = GetQueuedCompletionStatus(s->port, &bytes, &key, &got, 10000);
	TRUTH("a completion packet arrived", got != NULL);
	TRUTH("the packet carries the request's OVERLAPPED", got == ov);
	TRUTH("the packet carries the file's key", key == KEY1);
	TRUTH("the packet's class is the status's (SUCCEEDED / FAILED)", (ok != 0) == (st >= 0));
	/* MS-MPI's v1 channel picks its handler from OVERLAPPED.Internal. */
	if (got != NULL)
		TRUTH("Internal's class is the status's", ((LONG)got->Internal >= 0) == (st >= 0));
}

void noPacket1(Side1 *s) {
	DWORD bytes;
	ULONG_PTR key;
	OVERLAPPED *got = NULL;
	GetQueuedCompletionStatus(s->port, &bytes, &key, &got, 0);
	TRUTH("no completion packet", got == NULL);
}

ND_RESULT *reap1(Side1 *s) {
	ND_RESULT *r = NULL;
	for (int i = 0; i < 10000; i++) {
		if (s->cq->lpVtbl->GetResults(s->cq, &r, 1) == 1)
			return r;
		OVERLAPPED ov = {0};
		HRESULT hr = s->cq->lpVtbl->Notify(s->cq, ND_CQ_NOTIFY_ANY, &ov);
		if (hr != ND_PENDING) {
			CHECK("Notify", hr, ND_PENDING);
			break;
		}
		if (s->cq->lpVtbl->GetResults(s->cq, &r, 1) == 1) {
			s->cq->lpVtbl->CancelOverlappedRequests(s->cq);
			SIZE_T b;
			hr = s->cq->lpVtbl->GetOverlappedResult(s->cq, &ov, &b, FALSE);
			TRUTH("a canceled Notify says ND_CANCELED, or ND_SUCCESS if it fired first", hr == ND_CANCELED || hr == ND_SUCCESS);
			expectPacket1(s, &ov, hr);
			return r;
		}
		/* Wait through the port, as MS-MPI does. */
		expectPacket1(s, &ov, ND_SUCCESS);
		CHECK("Notify's completion", wait1(s->cq, &ov, ND_PENDING), ND_SUCCESS);
	}
	CHECK("a completion arrived", 0, 1);
	return r;
}

void expect1(Side1 *s, ND_RESULT *want, HRESULT st, SIZE_T bytes) {
	ND_RESULT *r = reap1(s);
	TRUTH("GetResults hands back the consumer's own ND_RESULT", r == want);
	if (r == NULL)
		return;
	CHECK("its status", r->Status, st);
	if (st == ND_SUCCESS)
		CHECK("its bytes", (HRESULT)r->BytesTransferred, (HRESULT)bytes);
}

INDListen *listen1(Side1 *s, USHORT *port) {
	INDListen *l = NULL;
	CHECK("Listen", s->ad->lpVtbl->Listen(s->ad, 0, 6, 0, port, &l), ND_SUCCESS);
	TRUTH("a port was assigned", *port != 0);
	return l;
}

void connect1(Side1 *srv, Side1 *cli, INDListen *l, USHORT port) {
	OVERLAPPED lov = {0}, cov = {0}, aov = {0};
	CHECK("GetConnectionRequest", l->lpVtbl->GetConnectionRequest(l, srv->conn, &lov), ND_PENDING);
	struct sockaddr_in dest = localAddr;
	dest.sin_port = port;
	CHECK("Connect", cli->conn->lpVtbl->Connect(cli->conn, cli->ep, (struct sockaddr *)&dest, sizeof dest, 6, 0, "v1", 2, &cov), ND_PENDING);
	expectPacket1(srv, &lov, ND_SUCCESS);
	CHECK("GetConnectionRequest's result", wait1(l, &lov, ND_PENDING), ND_SUCCESS);
	CHECK("Accept", srv->conn->lpVtbl->Accept(srv->conn, srv->ep, NULL, 0, &aov), ND_PENDING);
	expectPacket1(cli, &cov, ND_SUCCESS);
	CHECK("Connect's result", wait1(cli->conn, &cov, ND_PENDING), ND_SUCCESS);
	CHECK("CompleteConnect", cli->conn->lpVtbl->CompleteConnect(cli->conn, &cov), ND_PENDING);
	expectPacket1(cli, &cov, ND_SUCCESS);
	CHECK("CompleteConnect's result", wait1(cli->conn, &cov, ND_PENDING), ND_SUCCESS);
	expectPacket1(srv, &aov, ND_SUCCESS);
	CHECK("Accept's result", wait1(srv->conn, &aov, ND_PENDING), ND_SUCCESS);
}
