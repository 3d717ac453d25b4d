/* v1.c: ND v1 through every interface. */
#include "side1.h"

static void discovery1(void) {
	section("v1: IClassFactory, QueryInterface, QueryAddressList, OpenAdapter, Query, Control");
	IClassFactory *f = NULL;
	CHECK("DllGetClassObject(IClassFactory)", getClassObject(&providerClass, &IID_IClassFactory, (void **)&f), ND_SUCCESS);
	void *p = (void *)1;
	IUnknown outer;
	CHECK("CreateInstance with an outer object", f->lpVtbl->CreateInstance(f, &outer, &IID_INDProvider, &p), CLASS_E_NOAGGREGATION);
	CHECK("CreateInstance(IND2Provider)", f->lpVtbl->CreateInstance(f, NULL, &IID_IND2Provider, &p), E_NOINTERFACE);
	CHECK("LockServer", f->lpVtbl->LockServer(f, TRUE), S_OK);
	CHECK("Release the factory", f->lpVtbl->Release(f), 0);
	CHECK("DllCanUnloadNow with a server lock", canUnloadNow(), S_FALSE);
	CHECK("DllGetClassObject(IClassFactory)", getClassObject(&providerClass, &IID_IClassFactory, (void **)&f), ND_SUCCESS);
	f->lpVtbl->LockServer(f, FALSE);
	f->lpVtbl->Release(f);

	INDProvider *prov = provider1();
	IUnknown *u = NULL;
	CHECK("QueryInterface(INDProvider)", prov->lpVtbl->QueryInterface(prov, &IID_INDProvider, (void **)&u), S_OK);
	TRUTH("the same object", u == (IUnknown *)prov);
	prov->lpVtbl->Release(prov);
	CHECK("QueryInterface(IND2Provider)", prov->lpVtbl->QueryInterface(prov, &IID_IND2Provider, (void **)&u), E_NOINTERFACE);
	SIZE_T n = 0;
	CHECK("QueryAddressList probe", prov->lpVtbl->QueryAddressList(prov, NULL, &n), ND_BUFFER_OVERFLOW);
	SOCKET_ADDRESS_LIST *list = malloc(n);
	CHECK("QueryAddressList", prov->lpVtbl->QueryAddressList(prov, list, &n), ND_SUCCESS);
	TRUTH("addresses are listed", list->iAddressCount > 0);
	free(list);
	INDAdapter *ad = NULL;
	struct sockaddr_in bad = localAddr;
	bad.sin_family = 99;
	CHECK("OpenAdapter of an unknown family", prov->lpVtbl->OpenAdapter(prov, (struct sockaddr *)&bad, sizeof bad, &ad), ND_INVALID_ADDRESS);
	CHECK("OpenAdapter of a short sockaddr", prov->lpVtbl->OpenAdapter(prov, (struct sockaddr *)&localAddr, 4, &ad), ND_INVALID_ADDRESS);
	CHECK("OpenAdapter", prov->lpVtbl->OpenAdapter(prov, (struct sockaddr *)&localAddr, sizeof localAddr, &ad), ND_SUCCESS);
	CHECK("Release the provider first", prov->lpVtbl->Release(prov), 0);
	CHECK("QueryInterface(INDOverlapped) on the adapter", ad->lpVtbl->QueryInterface(ad, &IID_INDOverlapped, (void **)&u), S_OK);
	u->lpVtbl->Release(u);
	CHECK("QueryInterface(IND2Adapter) on a v1 adapter", ad->lpVtbl->QueryInterface(ad, &IID_IND2Adapter, (void **)&u), E_NOINTERFACE);
	ND_ADAPTER_INFO1 info;
	memset(&info, 0, sizeof info);
	n = 8;
	CHECK("Query into 8 bytes", ad->lpVtbl->Query(ad, 1, &info, &n), ND_BUFFER_OVERFLOW);
	CHECK("Query's size", (HRESULT)n, (HRESULT)sizeof info);
	TRUTH("the small buffer was left as it was", info.MaxCqEntries == 0);
	CHECK("Query of version 2", ad->lpVtbl->Query(ad, 2, &info, &n), ND_NOT_SUPPORTED);
	CHECK("Query", ad->lpVtbl->Query(ad, 1, &info, &n), ND_SUCCESS);
	TRUTH("MS-MPI's v1 minimum (MaxCqEntries >= 128)", info.MaxCqEntries >= 128);
	TRUTH("caller and callee data", info.MaxCallerData >= 56 && info.MaxCalleeData >= 148);
	CHECK("Control", ad->lpVtbl->Control(ad, 0x1234, NULL, 0, NULL, 0, NULL, NULL), ND_NOT_SUPPORTED);
	CHECK("Release the adapter", ad->lpVtbl->Release(ad), 0);
}

static void datapath1(void) {
	section("v1: connection with private data, Send/Receive (zero bytes, several entries, inline), batches, ND_RESULT identity");
	Side1 srv, cli;
	open1(&srv, 1 << 16);
	open1(&cli, 1 << 16);
	USHORT port = 0;
	INDListen *l = NULL;
	CHECK("Listen on port 0 without pAssignedPort", srv.ad->lpVtbl->Listen(srv.ad, 0, 6, 0, NULL, &l), ND_INVALID_PARAMETER_MIX);
	CHECK("Listen with protocol 300", srv.ad->lpVtbl->Listen(srv.ad, 0, 300, 0, &port, &l), ND_INVALID_PARAMETER_2);
	l = listen1(&srv, &port);
	INDListen *l2 = NULL;
	CHECK("a second Listen on the port", srv.ad->lpVtbl->Listen(srv.ad, 0, 6, port, NULL, &l2), ND_ADDRESS_ALREADY_EXISTS);

	ND_RESULT pre;
	ND_SGE two[2] = {sge1(&srv, 0, 16), sge1(&srv, 100, 16)};
	CHECK("Receive before connecting", srv.ep->lpVtbl->Receive(srv.ep, &pre, two, 2), ND_SUCCESS);
	OVERLAPPED lov = {0}, cov = {0}, aov = {0};
	CHECK("GetConnectionRequest", l->lpVtbl->GetConnectionRequest(l, srv.conn, &lov), ND_PENDING);
	struct sockaddr_in dest = localAddr;
	dest.sin_port = port;
	const char hello[] = "v1 caller data";
	CHECK("Connect", cli.conn->lpVtbl->Connect(cli.conn, cli.ep, (struct sockaddr *)&dest, sizeof dest, 6, 0, hello, sizeof hello, &cov), ND_PENDING);
	expectPacket1(&srv, &lov, ND_SUCCESS);
	CHECK("GetConnectionRequest's result", wait1(l, &lov, ND_PENDING), ND_SUCCESS);
	SIZE_T ird = 0, ord = 0, n = 0;
	CHECK("GetConnectionData probe", srv.conn->lpVtbl->GetConnectionData(srv.conn, &ird, &ord, NULL, &n), ND_BUFFER_OVERFLOW);
	TRUTH("its length", n >= sizeof hello);
	CHECK("read limits seen from the passive side", (HRESULT)(ird * 100 + ord), 404);
	char pd[64];
	n = sizeof pd;
	CHECK("GetConnectionData", srv.conn->lpVtbl->GetConnectionData(srv.conn, NULL, NULL, pd, &n), ND_SUCCESS);
	TRUTH("the caller's data", memcmp(pd, hello, sizeof hello) == 0);
	struct sockaddr_in peer;
	n = sizeof peer;
	CHECK("GetPeerAddress before Accept", srv.conn->lpVtbl->GetPeerAddress(srv.conn, (struct sockaddr *)&peer, &n), ND_SUCCESS);
	CHECK("Accept", srv.conn->lpVtbl->Accept(srv.conn, srv.ep, "callee", 6, &aov), ND_PENDING);
	expectPacket1(&cli, &cov, ND_SUCCESS);
	CHECK("Connect's result", wait1(cli.conn, &cov, ND_PENDING), ND_SUCCESS);
	n = 3;
	CHECK("GetConnectionData partial", cli.conn->lpVtbl->GetConnectionData(cli.conn, NULL, NULL, pd, &n), ND_BUFFER_OVERFLOW);
	TRUTH("the partial copy", memcmp(pd, "cal", 3) == 0 && n >= 6);
	CHECK("CompleteConnect", cli.conn->lpVtbl->CompleteConnect(cli.conn, &cov), ND_PENDING);
	expectPacket1(&cli, &cov, ND_SUCCESS);
	CHECK("CompleteConnect's result", wait1(cli.conn, &cov, ND_PENDING), ND_SUCCESS);
	expectPacket1(&srv, &aov, ND_SUCCESS);
	CHECK("Accept's result", wait1(srv.conn, &aov, ND_PENDING), ND_SUCCESS);
	n = sizeof peer;
	CHECK("GetLocalAddress", cli.conn->lpVtbl->GetLocalAddress(cli.conn, (struct sockaddr *)&peer, &n), ND_SUCCESS);

	/* Three entries, the middle one inline (no memory handle). */
	memcpy(cli.buf, "0123456789abcdefghijklmn", 24);
	char inl[8] = "INLINE!!";
	ND_SGE three[3] = {sge1(&cli, 0, 8), {inl, 8, NULL}, sge1(&cli, 16, 8)};
	ND_RESULT s1;
	CHECK("Send of three entries, one inline", cli.ep->lpVtbl->Send(cli.ep, &s1, three, 3, 0), ND_SUCCESS);
	expect1(&cli, &s1, ND_SUCCESS, 24);
	expect1(&srv, &pre, ND_SUCCESS, 24);
	TRUTH("scattered", memcmp(srv.buf, "01234567INLINE!!", 16) == 0 && memcmp(srv.buf + 100, "ghijklmn", 8) == 0);

	/* Zero bytes; a batch of Receives; silent Sends. */
	ND_RESULT r[4], s[4];
	srv.ep->lpVtbl->StartRequestBatch(srv.ep);
	for (int i = 0; i < 4; i++) {
		ND_SGE e = sge1(&srv, 1000 + 64 * i, 64);
		CHECK("Receive in a batch", srv.ep->lpVtbl->Receive(srv.ep, &r[i], &e, 1), ND_SUCCESS);
	}
	srv.ep->lpVtbl->SubmitRequestBatch(srv.ep);
	CHECK("Send of zero bytes", cli.ep->lpVtbl->Send(cli.ep, &s[0], NULL, 0, 0), ND_SUCCESS);
	ND_SGE e = sge1(&cli, 0, 5);
	CHECK("Send silent", cli.ep->lpVtbl->Send(cli.ep, &s[1], &e, 1, ND_OP_FLAG_SILENT_SUCCESS), ND_SUCCESS);
	CHECK("Send solicited", cli.ep->lpVtbl->Send(cli.ep, &s[2], &e, 1, ND_OP_FLAG_SEND_AND_SOLICIT_EVENT), ND_SUCCESS);
	CHECK("Send", cli.ep->lpVtbl->Send(cli.ep, &s[3], &e, 1, 0), ND_SUCCESS);
	expect1(&cli, &s[0], ND_SUCCESS, 0);
	expect1(&cli, &s[2], ND_SUCCESS, 5); /* the silent one gave none */
	expect1(&cli, &s[3], ND_SUCCESS, 5);
	expect1(&srv, &r[0], ND_SUCCESS, 0);
	for (int i = 1; i < 4; i++)
		expect1(&srv, &r[i], ND_SUCCESS, 5);
	ND_RESULT *many[8];
	CHECK("GetResults on an empty queue", (HRESULT)srv.cq->lpVtbl->GetResults(srv.cq, many, 8), 0);

	/* Disconnect: the peer's NotifyDisconnect, the Receives flush. */
	ND_RESULT last;
	CHECK("Receive", srv.ep->lpVtbl->Receive(srv.ep, &last, &e, 0), ND_SUCCESS);
	OVERLAPPED nov = {0}, dov = {0};
	CHECK("NotifyDisconnect", srv.conn->lpVtbl->NotifyDisconnect(srv.conn, &nov), ND_PENDING);
	CHECK("Disconnect", cli.conn->lpVtbl->Disconnect(cli.conn, &dov), ND_PENDING);
	expectPacket1(&cli, &dov, ND_SUCCESS);
	CHECK("Disconnect's result", wait1(cli.conn, &dov, ND_PENDING), ND_SUCCESS);
	expectPacket1(&srv, &nov, ND_SUCCESS);
	CHECK("NotifyDisconnect's result", wait1(srv.conn, &nov, ND_PENDING), ND_SUCCESS);
	CHECK("Disconnect after the peer's", srv.conn->lpVtbl->Disconnect(srv.conn, &dov), ND_PENDING);
	expectPacket1(&srv, &dov, ND_SUCCESS);
	CHECK("its result", wait1(srv.conn, &dov, ND_PENDING), ND_SUCCESS);
	expect1(&srv, &last, ND_CANCELED, 0);
	CHECK("Send after Disconnect", cli.ep->lpVtbl->Send(cli.ep, &s[0], NULL, 0, 0), ND_SUCCESS);
	expect1(&cli, &s[0], ND_CANCELED, 0);
	l->lpVtbl->Release(l);
	close1(&srv);
	close1(&cli);
}

static void memory1(void) {
	section("v1: windows bound and invalidated, Read and Write by descriptor, SendAndInvalidate, READ_FENCE");
	Side1 srv, cli;
	open1(&srv, 1 << 16);
	open1(&cli, 1 << 16);
	USHORT port;
	INDListen *l = listen1(&srv, &port);
	connect1(&srv, &cli, l, port);

	ND_RESULT invalidated = {ND_PENDING, 0};
	INDMemoryWindow *mw = NULL;
	CHECK("CreateMemoryWindow", srv.ad->lpVtbl->CreateMemoryWindow(srv.ad, &invalidated, &mw), ND_SUCCESS);
	ND_MW_DESCRIPTOR desc;
	ND_RESULT bind;
	CHECK("Bind without a descriptor", srv.ep->lpVtbl->Bind(srv.ep, &bind, srv.mr, mw, srv.buf + 4096, 4096, ND_OP_FLAG_ALLOW_READ, NULL), ND_INVALID_PARAMETER_7);
	CHECK("Bind outside the region", srv.ep->lpVtbl->Bind(srv.ep, &bind, srv.mr, mw, srv.buf + 65000, 4096, ND_OP_FLAG_ALLOW_READ, &desc), ND_INVALID_PARAMETER_4);
	CHECK("Bind", srv.ep->lpVtbl->Bind(srv.ep, &bind, srv.mr, mw, srv.buf + 4096, 4096, ND_OP_FLAG_ALLOW_READ | ND_OP_FLAG_ALLOW_WRITE, &desc), ND_SUCCESS);
	expect1(&srv, &bind, ND_SUCCESS, 0);
	/* The descriptor is big-endian: its length reads 4096 swapped. */
	TRUTH("the descriptor's length is big-endian", desc.Length == _byteswap_uint64(4096));
	TRUTH("its base is the buffer's address, big-endian", desc.Base == _byteswap_uint64((UINT64)(uintptr_t)(srv.buf + 4096)));

	memcpy(cli.buf, "by descriptor", 13);
	ND_SGE w = sge1(&cli, 0, 13);
	ND_RESULT wr, rd, snd, rcv;
	CHECK("Write", cli.ep->lpVtbl->Write(cli.ep, &wr, &w, 1, &desc, 100, 0), ND_SUCCESS);
	expect1(&cli, &wr, ND_SUCCESS, 13);
	TRUTH("the Write landed", memcmp(srv.buf + 4196, "by descriptor", 13) == 0);
	ND_SGE rs = sge1(&cli, 200, 13);
	ND_SGE ss = sge1(&cli, 300, 4);
	ND_SGE rr = sge1(&srv, 0, 64);
	CHECK("Receive", srv.ep->lpVtbl->Receive(srv.ep, &rcv, &rr, 1), ND_SUCCESS);
	CHECK("Read", cli.ep->lpVtbl->Read(cli.ep, &rd, &rs, 1, &desc, 100, 0), ND_SUCCESS);
	CHECK("SendAndInvalidate fenced behind the Read", cli.ep->lpVtbl->SendAndInvalidate(cli.ep, &snd, &ss, 1, &desc, ND_OP_FLAG_READ_FENCE), ND_SUCCESS);
	expect1(&cli, &rd, ND_SUCCESS, 13);
	TRUTH("the Read read it", memcmp(cli.buf + 200, "by descriptor", 13) == 0);
	expect1(&cli, &snd, ND_SUCCESS, 4);
	expect1(&srv, &rcv, ND_SUCCESS, 4);
	CHECK("the window's invalidate result", invalidated.Status, ND_SUCCESS);
	/* The window is unbound: a Write through it fails and ends the
	 * connection. */
	CHECK("Receive", srv.ep->lpVtbl->Receive(srv.ep, &rcv, &rr, 1), ND_SUCCESS);
	CHECK("Write through the invalidated window", cli.ep->lpVtbl->Write(cli.ep, &wr, &w, 1, &desc, 0, 0), ND_SUCCESS);
	expect1(&cli, &wr, ND_ACCESS_VIOLATION, 0);
	expect1(&srv, &rcv, ND_CANCELED, 0);
	mw->lpVtbl->Release(mw);
	l->lpVtbl->Release(l);
	close1(&srv);
	close1(&cli);

	section("v1: Invalidate, then the peer's Read fails; Deregister with a window bound");
	open1(&srv, 1 << 16);
	open1(&cli, 1 << 16);
	l = listen1(&srv, &port);
	connect1(&srv, &cli, l, port);
	CHECK("CreateMemoryWindow without an invalidate result", srv.ad->lpVtbl->CreateMemoryWindow(srv.ad, NULL, &mw), ND_SUCCESS);
	CHECK("Bind read-only", srv.ep->lpVtbl->Bind(srv.ep, &bind, srv.mr, mw, srv.buf, 4096, ND_OP_FLAG_ALLOW_READ | ND_OP_FLAG_SILENT_SUCCESS, &desc), ND_SUCCESS);
	OVERLAPPED ov = {0};
	HRESULT hr = srv.ad->lpVtbl->DeregisterMemory(srv.ad, srv.mr, &ov);
	CHECK("DeregisterMemory with a window bound", wait1(srv.ad, &ov, hr), ND_DEVICE_BUSY);
	expectPacket1(&srv, &ov, ND_DEVICE_BUSY);
	CHECK("Write to a read-only window", cli.ep->lpVtbl->Write(cli.ep, &wr, &w, 1, &desc, 0, 0), ND_SUCCESS);
	expect1(&cli, &wr, ND_ACCESS_VIOLATION, 0);
	mw->lpVtbl->Release(mw);
	l->lpVtbl->Release(l);
	close1(&srv);
	close1(&cli);
}

static void misc1(void) {
	section("v1: reject, cancellation, CQ overrun, Notify through the event and the port");
	Side1 srv, cli;
	open1(&srv, 4096);
	open1(&cli, 4096);
	USHORT port;
	INDListen *l = listen1(&srv, &port);
	OVERLAPPED lov = {0}, cov = {0};
	CHECK("GetConnectionRequest", l->lpVtbl->GetConnectionRequest(l, srv.conn, &lov), ND_PENDING);
	struct sockaddr_in dest = localAddr;
	dest.sin_port = port;
	CHECK("Connect", cli.conn->lpVtbl->Connect(cli.conn, cli.ep, (struct sockaddr *)&dest, sizeof dest, 6, 0, NULL, 0, &cov), ND_PENDING);
	expectPacket1(&srv, &lov, ND_SUCCESS);
	CHECK("Reject", srv.conn->lpVtbl->Reject(srv.conn, "no", 2), ND_SUCCESS);
	expectPacket1(&cli, &cov, ND_CONNECTION_REFUSED);
	CHECK("the rejected Connect", wait1(cli.conn, &cov, ND_PENDING), ND_CONNECTION_REFUSED);
	char pd[8];
	SIZE_T n = sizeof pd;
	CHECK("GetConnectionData after the refusal", cli.conn->lpVtbl->GetConnectionData(cli.conn, NULL, NULL, pd, &n), ND_SUCCESS);
	TRUTH("the reject's data", n >= 2 && memcmp(pd, "no", 2) == 0);
	/* A Connect to another protocol finds no listener. */
	CHECK("Connect for protocol 17", cli.conn->lpVtbl->Connect(cli.conn, cli.ep, (struct sockaddr *)&dest, sizeof dest, 17, 0, NULL, 0, &cov), ND_PENDING);
	expectPacket1(&cli, &cov, ND_CONNECTION_REFUSED);
	CHECK("its result", wait1(cli.conn, &cov, ND_PENDING), ND_CONNECTION_REFUSED);

	/* Cancellation of a GetConnectionRequest and of Notify requests. */
	INDConnector *c2 = NULL;
	srv.ad->lpVtbl->CreateConnector(srv.ad, &c2);
	CHECK("GetConnectionRequest", l->lpVtbl->GetConnectionRequest(l, c2, &lov), ND_PENDING);
	CHECK("CancelOverlappedRequests", l->lpVtbl->CancelOverlappedRequests(l), ND_SUCCESS);
	expectPacket1(&srv, &lov, ND_CANCELED);
	CHECK("canceled", wait1(l, &lov, ND_PENDING), ND_CANCELED);
	c2->lpVtbl->Release(c2);
	OVERLAPPED ov1 = {0}, ov2 = {0};
	ov2.hEvent = srv.event;
	CHECK("Notify", srv.cq->lpVtbl->Notify(srv.cq, ND_CQ_NOTIFY_ANY, &ov1), ND_PENDING);
	CHECK("Notify with an event", srv.cq->lpVtbl->Notify(srv.cq, ND_CQ_NOTIFY_SOLICITED, &ov2), ND_PENDING);
	srv.cq->lpVtbl->CancelOverlappedRequests(srv.cq);
	expectPacket1(&srv, &ov1, ND_CANCELED);
	expectPacket1(&srv, &ov2, ND_CANCELED);
	TRUTH("the event is set", WaitForSingleObject(srv.event, 0) == WAIT_OBJECT_0);
	SIZE_T b;
	CHECK("canceled", srv.cq->lpVtbl->GetOverlappedResult(srv.cq, &ov2, &b, FALSE), ND_CANCELED);

	/* Overrun: three Receives flushed into a queue of two. */
	INDCompletionQueue *small = NULL;
	INDConnector *c3 = NULL;
	INDEndpoint *ep = NULL;
	CHECK("CreateCompletionQueue of 2", srv.ad->lpVtbl->CreateCompletionQueue(srv.ad, 2, &small), ND_SUCCESS);
	srv.ad->lpVtbl->CreateConnector(srv.ad, &c3);
	CHECK("CreateEndpoint", c3->lpVtbl->CreateEndpoint(c3, small, small, 4, 4, 1, 1, 0, 0, NULL, &ep), ND_SUCCESS);
	ND_RESULT rr[3];
	ND_SGE e = sge1(&srv, 0, 8);
	for (int i = 0; i < 3; i++)
		CHECK("Receive", ep->lpVtbl->Receive(ep, &rr[i], &e, 1), ND_SUCCESS);
	OVERLAPPED eov = {0};
	eov.hEvent = srv.event;
	CHECK("Notify(ERRORS)", small->lpVtbl->Notify(small, ND_CQ_NOTIFY_ERRORS, &eov), ND_PENDING);
	CHECK("Flush", ep->lpVtbl->Flush(ep), ND_SUCCESS);
	TRUTH("the event is set", WaitForSingleObject(srv.event, 10000) == WAIT_OBJECT_0);
	CHECK("Notify(ERRORS) on the overrun queue", small->lpVtbl->GetOverlappedResult(small, &eov, &b, FALSE), ND_BUFFER_OVERFLOW);
	expectPacket1(&srv, &eov, ND_BUFFER_OVERFLOW);
	/* Release order: connector, queue, then the endpoint last. */
	c3->lpVtbl->Release(c3);
	small->lpVtbl->Release(small);
	ep->lpVtbl->Release(ep);
	l->lpVtbl->Release(l);
	close1(&srv);
	close1(&cli);
}

static void badInput1(void) {
	section("v1: bad input: NULL pointers, sizes, forged handles and objects, released objects");
	Side1 s;
	open1(&s, 4096);
	OVERLAPPED ov = {0};
	ND_MR_HANDLE h = NULL;
	CHECK("RegisterMemory(NULL)", s.ad->lpVtbl->RegisterMemory(s.ad, NULL, 10, &ov, &h), ND_INVALID_PARAMETER);
	CHECK("RegisterMemory of 0 bytes", s.ad->lpVtbl->RegisterMemory(s.ad, s.buf, 0, &ov, &h), ND_INVALID_BUFFER_SIZE);
	CHECK("RegisterMemory without OVERLAPPED", s.ad->lpVtbl->RegisterMemory(s.ad, s.buf, 10, NULL, &h), ND_INVALID_PARAMETER_3);
	CHECK("RegisterMemory without a handle", s.ad->lpVtbl->RegisterMemory(s.ad, s.buf, 10, &ov, NULL), ND_INVALID_PARAMETER_4);
	static const char readonly[4096] = "read-only data";
	CHECK("RegisterMemory of read-only memory", s.ad->lpVtbl->RegisterMemory(s.ad, readonly, 100, &ov, &h), ND_ACCESS_VIOLATION);
	CHECK("DeregisterMemory of a forged handle", s.ad->lpVtbl->DeregisterMemory(s.ad, (ND_MR_HANDLE)0x123456, &ov), ND_INVALID_PARAMETER_1);
	INDCompletionQueue *cq = NULL;
	CHECK("CreateCompletionQueue of 0", s.ad->lpVtbl->CreateCompletionQueue(s.ad, 0, &cq), ND_INVALID_PARAMETER);
	CHECK("CreateCompletionQueue without an out pointer", s.ad->lpVtbl->CreateCompletionQueue(s.ad, 4, NULL), ND_INVALID_PARAMETER_2);
	INDConnector *c = NULL;
	INDEndpoint *ep = NULL;
	s.ad->lpVtbl->CreateConnector(s.ad, &c);
	CHECK("CreateEndpoint with a forged queue", c->lpVtbl->CreateEndpoint(c, (INDCompletionQueue *)&ov, s.cq, 4, 4, 1, 1, 0, 0, NULL, &ep), ND_INVALID_PARAMETER_1);
	CHECK("CreateEndpoint with an adapter for a queue", c->lpVtbl->CreateEndpoint(c, s.cq, (INDCompletionQueue *)s.ad, 4, 4, 1, 1, 0, 0, NULL, &ep), ND_INVALID_PARAMETER_2);
	CHECK("CreateEndpoint beyond the depth", c->lpVtbl->CreateEndpoint(c, s.cq, s.cq, (SIZE_T)1 << 40, 4, 1, 1, 0, 0, NULL, &ep), ND_INVALID_PARAMETER_3);
	CHECK("CreateEndpoint beyond the read limit", c->lpVtbl->CreateEndpoint(c, s.cq, s.cq, 4, 4, 1, 1, 1 << 20, 0, NULL, &ep), ND_INVALID_PARAMETER_7);
	CHECK("Connect with another connector's endpoint", c->lpVtbl->Connect(c, s.ep, (struct sockaddr *)&localAddr, sizeof localAddr, 6, 0, NULL, 0, &ov), ND_INVALID_PARAMETER_1);
	c->lpVtbl->Release(c);
	ND_RESULT r;
	ND_SGE many[5];
	memset(many, 0, sizeof many);
	CHECK("Receive of 5 entries of 4", s.ep->lpVtbl->Receive(s.ep, &r, many, 5), ND_DATA_OVERRUN);
	ND_SGE at0 = {NULL, 16, s.mr};
	CHECK("Receive into NULL", s.ep->lpVtbl->Receive(s.ep, &r, &at0, 1), ND_ACCESS_VIOLATION);
	CHECK("Receive without a result", s.ep->lpVtbl->Receive(s.ep, NULL, NULL, 0), ND_INVALID_PARAMETER_1);
	CHECK("Send unconnected", s.ep->lpVtbl->Send(s.ep, &r, NULL, 0, 0), ND_CONNECTION_INVALID);
	CHECK("Read without a descriptor", s.ep->lpVtbl->Read(s.ep, &r, NULL, 0, NULL, 0, 0), ND_INVALID_PARAMETER_4);
	ND_SGE outside = {s.buf + 4000, 200, s.mr};
	ND_SGE forged = {s.buf, 16, (ND_MR_HANDLE)0x77777};
	ND_RESULT r1, r2;
	CHECK("Receive past the registration", s.ep->lpVtbl->Receive(s.ep, &r1, &outside, 1), ND_SUCCESS);
	CHECK("Receive with a forged handle", s.ep->lpVtbl->Receive(s.ep, &r2, &forged, 1), ND_SUCCESS);
	CHECK("Flush", s.ep->lpVtbl->Flush(s.ep), ND_SUCCESS);
	expect1(&s, &r1, ND_CANCELED, 0);
	expect1(&s, &r2, ND_CANCELED, 0);
	SIZE_T n = 0;
	CHECK("GetLocalAddress unconnected", s.conn->lpVtbl->GetLocalAddress(s.conn, NULL, &n), ND_CONNECTION_INVALID);
	/* Released objects answer ND_INVALID_HANDLE. */
	INDMemoryWindow *mw = NULL;
	s.ad->lpVtbl->CreateMemoryWindow(s.ad, NULL, &mw);
	CHECK("Release", mw->lpVtbl->Release(mw), 0);
	CHECK("AddRef of a released window", mw->lpVtbl->AddRef(mw), 0);
	s.ad->lpVtbl->CreateCompletionQueue(s.ad, 4, &cq);
	cq->lpVtbl->Release(cq);
	CHECK("Notify on a released queue", cq->lpVtbl->Notify(cq, ND_CQ_NOTIFY_ANY, &ov), ND_INVALID_HANDLE);
	CHECK("GetResults on a released queue", (HRESULT)cq->lpVtbl->GetResults(cq, NULL, 1), 0);
	close1(&s);
}

void testV1(void) {
	discovery1();
	datapath1();
	memory1();
	misc1();
	badInput1();
}
