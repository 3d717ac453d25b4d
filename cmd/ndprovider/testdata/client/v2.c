/* v2.c: ND v2 through every interface. */
#include "side2.h"

static const GUID bogusClass = {0x01234567, 0x89ab, 0xcdef, {1, 2, 3, 4, 5, 6, 7, 8}};

static void discovery2(void) {
	section("v2: DllGetClassObject, QueryInterface, QueryAddressList, ResolveAddress, Query");
	void *p = (void *)1;
	CHECK("DllGetClassObject of another class", getClassObject(&bogusClass, &IID_IND2Provider, &p), CLASS_E_CLASSNOTAVAILABLE);
	TRUTH("its out pointer is NULL", p == NULL);
	CHECK("DllGetClassObject(INDAdapter)", getClassObject(&providerClass, &IID_INDAdapter, &p), E_NOINTERFACE);
	IND2Provider *prov = provider2();
	CHECK("DllCanUnloadNow with a provider", canUnloadNow(), S_FALSE);
	IUnknown *u = NULL;
	CHECK("QueryInterface(IUnknown)", prov->lpVtbl->QueryInterface(prov, &IID_IUnknown, (void **)&u), S_OK);
	TRUTH("the same object", u == (IUnknown *)prov);
	CHECK("QueryInterface(INDProvider)", prov->lpVtbl->QueryInterface(prov, &IID_INDProvider, (void **)&u), E_NOINTERFACE);
	CHECK("AddRef", prov->lpVtbl->AddRef(prov), 3);
	CHECK("Release", prov->lpVtbl->Release(prov), 2);
	CHECK("Release", prov->lpVtbl->Release(prov), 1);

	ULONG n = 0;
	CHECK("QueryAddressList probe", prov->lpVtbl->QueryAddressList(prov, NULL, &n), ND_BUFFER_OVERFLOW);
	TRUTH("QueryAddressList says a size", n >= sizeof(SOCKET_ADDRESS_LIST));
	SOCKET_ADDRESS_LIST *list = malloc(n);
	ULONG small = n - 1;
	CHECK("QueryAddressList into a buffer too small", prov->lpVtbl->QueryAddressList(prov, list, &small), ND_BUFFER_OVERFLOW);
	CHECK("QueryAddressList", prov->lpVtbl->QueryAddressList(prov, list, &n), ND_SUCCESS);
	int found = 0;
	for (int i = 0; i < list->iAddressCount; i++) {
		struct sockaddr_in *a = (struct sockaddr_in *)list->Address[i].lpSockaddr;
		if (a->sin_family == AF_INET && a->sin_addr.s_addr == localAddr.sin_addr.s_addr)
			found = 1;
	}
	TRUTH("the address under test is listed", found);
	free(list);

	UINT64 id = 0;
	struct sockaddr_in other = localAddr;
	other.sin_addr.s_addr = inet_addr("192.0.2.254");
	CHECK("ResolveAddress of a foreign address", prov->lpVtbl->ResolveAddress(prov, (struct sockaddr *)&other, sizeof other, &id), ND_INVALID_ADDRESS);
	CHECK("ResolveAddress of a short sockaddr", prov->lpVtbl->ResolveAddress(prov, (struct sockaddr *)&localAddr, 8, &id), ND_INVALID_ADDRESS);
	CHECK("ResolveAddress without an out pointer", prov->lpVtbl->ResolveAddress(prov, (struct sockaddr *)&localAddr, sizeof localAddr, NULL), ND_INVALID_PARAMETER_3);
	CHECK("ResolveAddress", prov->lpVtbl->ResolveAddress(prov, (struct sockaddr *)&localAddr, sizeof localAddr, &id), ND_SUCCESS);
	IND2Adapter *ad = NULL;
	CHECK("OpenAdapter(INDAdapter)", prov->lpVtbl->OpenAdapter(prov, &IID_INDAdapter, id, (void **)&ad), E_NOINTERFACE);
	CHECK("OpenAdapter of an unknown id", prov->lpVtbl->OpenAdapter(prov, &IID_IND2Adapter, id + 77, (void **)&ad), ND_INVALID_PARAMETER_2);
	CHECK("OpenAdapter", prov->lpVtbl->OpenAdapter(prov, &IID_IND2Adapter, id, (void **)&ad), ND_SUCCESS);
	CHECK("Release the provider before its adapter", prov->lpVtbl->Release(prov), 0);

	ND2_ADAPTER_INFO info;
	memset(&info, 0, sizeof info);
	n = 0;
	CHECK("Query probe", ad->lpVtbl->Query(ad, NULL, &n), ND_BUFFER_OVERFLOW);
	CHECK("Query's size", n, sizeof(ND2_ADAPTER_INFO));
	info.InfoVersion = ND_VERSION_2;
	CHECK("Query", ad->lpVtbl->Query(ad, &info, &n), ND_SUCCESS);
	TRUTH("AdapterId is the resolved id", info.AdapterId == id);
	TRUTH("in-order placement is reported", info.AdapterFlags & ND_ADAPTER_FLAG_IN_ORDER_DMA_SUPPORTED);
	TRUTH("loopback connections are reported", info.AdapterFlags & ND_ADAPTER_FLAG_LOOPBACK_CONNECTIONS_SUPPORTED);
	TRUTH("MS-MPI's minimum depths are met", info.MaxCompletionQueueDepth >= 160 && info.MaxInitiatorQueueDepth >= 32 && info.MaxReceiveQueueDepth >= 128);
	TRUTH("MaxReadSge <= MaxInitiatorSge", info.MaxReadSge <= info.MaxInitiatorSge);
	TRUTH("shared receive queues are served", info.MaxSharedReceiveQueueDepth > 0);
	n = 0;
	CHECK("adapter QueryAddressList probe", ad->lpVtbl->QueryAddressList(ad, NULL, &n), ND_BUFFER_OVERFLOW);
	HANDLE file = NULL;
	CHECK("CreateOverlappedFile", ad->lpVtbl->CreateOverlappedFile(ad, &file), ND_SUCCESS);
	CloseHandle(file); /* the consumer closes it before the adapter goes, as MS-MPI does */
	CHECK("Release the adapter", ad->lpVtbl->Release(ad), 0);
}

static void datapath2(void) {
	section("v2: connection with private data, Send/Receive (zero bytes, several entries, inline, silent), GetResults");
	Side2 srv, cli;
	open2(&srv, 1 << 16);
	open2(&cli, 1 << 16);
	struct sockaddr_in dest;
	IND2Listener *l = listen2(&srv, &dest);

	/* A Receive posted before any connection. */
	ND2_SGE two[2] = {sge2(&srv, 0, 16), sge2(&srv, 100, 16)};
	CHECK("Receive before connecting", srv.qp->lpVtbl->Receive(srv.qp, (void *)0x1001, two, 2), ND_SUCCESS);

	OVERLAPPED lov = {0}, cov = {0}, aov = {0};
	CHECK("GetConnectionRequest", l->lpVtbl->GetConnectionRequest(l, (IUnknown *)srv.conn, &lov), ND_PENDING);
	struct sockaddr_in bind = addrWithPort(0);
	CHECK("connector Bind", cli.conn->lpVtbl->Bind(cli.conn, (struct sockaddr *)&bind, sizeof bind), ND_SUCCESS);
	CHECK("connector Bind again", cli.conn->lpVtbl->Bind(cli.conn, (struct sockaddr *)&bind, sizeof bind), (HRESULT)0xC0000328);
	const char hello[] = "hello from the active side";
	CHECK("Connect", cli.conn->lpVtbl->Connect(cli.conn, (IUnknown *)cli.qp, (struct sockaddr *)&dest, sizeof dest, 3, 4, hello, sizeof hello, &cov), ND_PENDING);
	CHECK("a second Connect while the first is under way", cli.conn->lpVtbl->Connect(cli.conn, (IUnknown *)cli.qp, (struct sockaddr *)&dest, sizeof dest, 3, 4, NULL, 0, &aov), ND_CONNECTION_ACTIVE);
	expectPacket2(&srv, &lov, ND_SUCCESS);
	CHECK("GetConnectionRequest's result", l->lpVtbl->GetOverlappedResult(l, &lov, FALSE), ND_SUCCESS);
	ULONG n = 0;
	CHECK("GetPrivateData probe", srv.conn->lpVtbl->GetPrivateData(srv.conn, NULL, &n), ND_BUFFER_OVERFLOW);
	TRUTH("GetPrivateData says the full length", n >= sizeof hello);
	char pd[64];
	n = sizeof pd;
	CHECK("GetPrivateData", srv.conn->lpVtbl->GetPrivateData(srv.conn, pd, &n), ND_SUCCESS);
	TRUTH("the private data", memcmp(pd, hello, sizeof hello) == 0);
	ULONG ird = 0, ord = 0;
	CHECK("GetReadLimits", srv.conn->lpVtbl->GetReadLimits(srv.conn, &ird, &ord), ND_SUCCESS);
	CHECK("inbound read limit (the peer's outbound)", ird, 4);
	CHECK("outbound read limit (the peer's inbound)", ord, 3);
	struct sockaddr_in peer;
	n = 4;
	CHECK("GetPeerAddress into 4 bytes", srv.conn->lpVtbl->GetPeerAddress(srv.conn, (struct sockaddr *)&peer, &n), ND_BUFFER_OVERFLOW);
	CHECK("GetPeerAddress's size", n, sizeof peer);
	CHECK("GetPeerAddress before Accept", srv.conn->lpVtbl->GetPeerAddress(srv.conn, (struct sockaddr *)&peer, &n), ND_SUCCESS);
	TRUTH("the peer's address", peer.sin_addr.s_addr == localAddr.sin_addr.s_addr);
	CHECK("Accept", srv.conn->lpVtbl->Accept(srv.conn, (IUnknown *)srv.qp, 2, 2, "welcome", 7, &aov), ND_PENDING);
	expectPacket2(&cli, &cov, ND_SUCCESS);
	CHECK("Connect's result", cli.conn->lpVtbl->GetOverlappedResult(cli.conn, &cov, FALSE), ND_SUCCESS);
	n = 3;
	CHECK("GetPrivateData partial", cli.conn->lpVtbl->GetPrivateData(cli.conn, pd, &n), ND_BUFFER_OVERFLOW);
	TRUTH("the partial copy", memcmp(pd, "wel", 3) == 0 && n >= 7);
	CHECK("GetReadLimits on the active side", cli.conn->lpVtbl->GetReadLimits(cli.conn, &ird, &ord), ND_SUCCESS);
	CHECK("accepted inbound limit", ird, 2);
	CHECK("accepted outbound limit", ord, 2);
	CHECK("CompleteConnect", cli.conn->lpVtbl->CompleteConnect(cli.conn, &cov), ND_PENDING);
	expectPacket2(&cli, &cov, ND_SUCCESS);
	CHECK("CompleteConnect's result", cli.conn->lpVtbl->GetOverlappedResult(cli.conn, &cov, TRUE), ND_SUCCESS);
	expectPacket2(&srv, &aov, ND_SUCCESS);
	CHECK("Accept's result", srv.conn->lpVtbl->GetOverlappedResult(srv.conn, &aov, FALSE), ND_SUCCESS);
	struct sockaddr_in local;
	n = sizeof local;
	CHECK("GetLocalAddress", cli.conn->lpVtbl->GetLocalAddress(cli.conn, (struct sockaddr *)&local, &n), ND_SUCCESS);

	/* Three entries into the Receive of two (16 + 16): 24 bytes. */
	memcpy(cli.buf, "0123456789abcdefghijklmn", 24);
	ND2_SGE three[3] = {sge2(&cli, 0, 8), sge2(&cli, 8, 8), sge2(&cli, 16, 8)};
	CHECK("Send of three entries", cli.qp->lpVtbl->Send(cli.qp, (void *)0x2001, three, 3, 0), ND_SUCCESS);
	expect2(&cli, (void *)0x2001, Nd2RequestTypeSend, ND_SUCCESS, 0);
	expect2(&srv, (void *)0x1001, Nd2RequestTypeReceive, ND_SUCCESS, 24);
	TRUTH("scattered", memcmp(srv.buf, "0123456789abcdef", 16) == 0 && memcmp(srv.buf + 100, "ghijklmn", 8) == 0);

	/* Zero bytes. */
	ND2_SGE one = sge2(&srv, 200, 64);
	CHECK("Receive", srv.qp->lpVtbl->Receive(srv.qp, (void *)0x1002, &one, 1), ND_SUCCESS);
	CHECK("Send of zero bytes", cli.qp->lpVtbl->Send(cli.qp, (void *)0x2002, NULL, 0, 0), ND_SUCCESS);
	expect2(&cli, (void *)0x2002, Nd2RequestTypeSend, ND_SUCCESS, 0);
	expect2(&srv, (void *)0x1002, Nd2RequestTypeReceive, ND_SUCCESS, 0);

	/* Inline from unregistered memory, and silent success. */
	char inl[] = "inline bytes";
	ND2_SGE isge = {inl, sizeof inl, 0};
	CHECK("Receive", srv.qp->lpVtbl->Receive(srv.qp, (void *)0x1003, &one, 1), ND_SUCCESS);
	ND2_SGE two2 = sge2(&srv, 300, 64);
	CHECK("Receive", srv.qp->lpVtbl->Receive(srv.qp, (void *)0x1004, &two2, 1), ND_SUCCESS);
	CHECK("Send with an unknown flag", cli.qp->lpVtbl->Send(cli.qp, NULL, &isge, 1, 0x80), ND_INVALID_PARAMETER_4);
	CHECK("Send inline, silent", cli.qp->lpVtbl->Send(cli.qp, (void *)0x2003, &isge, 1, ND_OP_FLAG_INLINE | ND_OP_FLAG_SILENT_SUCCESS), ND_SUCCESS);
	inl[0] = 'X'; /* copied at the post */
	ND2_SGE s2 = sge2(&cli, 0, 5);
	CHECK("Send, signaled", cli.qp->lpVtbl->Send(cli.qp, (void *)0x2004, &s2, 1, ND_OP_FLAG_SEND_AND_SOLICIT_EVENT), ND_SUCCESS);
	expect2(&cli, (void *)0x2004, Nd2RequestTypeSend, ND_SUCCESS, 0); /* the silent one gave none */
	expect2(&srv, (void *)0x1003, Nd2RequestTypeReceive, ND_SUCCESS, sizeof inl);
	expect2(&srv, (void *)0x1004, Nd2RequestTypeReceive, ND_SUCCESS, 5);
	TRUTH("the inline bytes as they were at the post", memcmp(srv.buf + 200, "inline bytes", sizeof inl) == 0);

	/* Several results in one GetResults. */
	for (int i = 0; i < 4; i++) {
		ND2_SGE r = sge2(&srv, 1000 + 64 * i, 64);
		CHECK("Receive", srv.qp->lpVtbl->Receive(srv.qp, (void *)(uintptr_t)(0x1100 + i), &r, 1), ND_SUCCESS);
	}
	for (int i = 0; i < 4; i++)
		CHECK("Send", cli.qp->lpVtbl->Send(cli.qp, (void *)(uintptr_t)(0x2100 + i), &s2, 1, 0), ND_SUCCESS);
	ND2_RESULT rs[8];
	ULONG got = 0;
	for (int tries = 0; got < 4 && tries < 100000; tries++)
		got += srv.cq->lpVtbl->GetResults(srv.cq, rs + got, 8 - got);
	CHECK("four results", got, 4);
	for (ULONG i = 0; i < got; i++)
		TRUTH("in post order", rs[i].RequestContext == (void *)(uintptr_t)(0x1100 + i) && rs[i].BytesTransferred == 5);
	got = 0;
	for (int tries = 0; got < 4 && tries < 100000; tries++)
		got += cli.cq->lpVtbl->GetResults(cli.cq, rs + got, 8 - got);
	CHECK("four send results", got, 4);

	/* The peer's Disconnect: NotifyDisconnect fires, Receives flush. */
	OVERLAPPED nov = {0}, dov = {0};
	CHECK("Receive", srv.qp->lpVtbl->Receive(srv.qp, (void *)0x1200, &one, 1), ND_SUCCESS);
	CHECK("NotifyDisconnect", srv.conn->lpVtbl->NotifyDisconnect(srv.conn, &nov), ND_PENDING);
	CHECK("Disconnect", cli.conn->lpVtbl->Disconnect(cli.conn, &dov), ND_PENDING);
	expectPacket2(&cli, &dov, ND_SUCCESS);
	CHECK("Disconnect's result", cli.conn->lpVtbl->GetOverlappedResult(cli.conn, &dov, FALSE), ND_SUCCESS);
	expectPacket2(&srv, &nov, ND_SUCCESS);
	CHECK("NotifyDisconnect's result", srv.conn->lpVtbl->GetOverlappedResult(srv.conn, &nov, FALSE), ND_SUCCESS);
	CHECK("the passive side's Disconnect", srv.conn->lpVtbl->Disconnect(srv.conn, &dov), ND_PENDING);
	expectPacket2(&srv, &dov, ND_SUCCESS);
	CHECK("its result (the peer disconnected first)", srv.conn->lpVtbl->GetOverlappedResult(srv.conn, &dov, FALSE), ND_SUCCESS);
	expect2(&srv, (void *)0x1200, Nd2RequestTypeReceive, ND_CANCELED, 0);

	l->lpVtbl->Release(l);
	close2(&srv);
	close2(&cli);
}

static void memory2(void) {
	section("v2: memory windows bound and invalidated, RDMA Read and Write, region tokens, READ_FENCE");
	Side2 srv, cli;
	open2(&srv, 1 << 16);
	open2(&cli, 1 << 16);
	struct sockaddr_in dest;
	IND2Listener *l = listen2(&srv, &dest);
	connect2(&srv, &cli, l, &dest, srv.conn);

	IND2MemoryWindow *mw = NULL;
	CHECK("CreateMemoryWindow", srv.ad->lpVtbl->CreateMemoryWindow(srv.ad, &IID_IND2MemoryWindow, (void **)&mw), ND_SUCCESS);
	CHECK("Bind with an unknown flag", srv.qp->lpVtbl->Bind(srv.qp, NULL, (IUnknown *)srv.mr, (IUnknown *)mw, srv.buf + 4096, 4096, 0x40), ND_INVALID_PARAMETER_6);
	CHECK("Bind", srv.qp->lpVtbl->Bind(srv.qp, (void *)0x3001, (IUnknown *)srv.mr, (IUnknown *)mw, srv.buf + 4096, 4096, ND_OP_FLAG_ALLOW_READ | ND_OP_FLAG_ALLOW_WRITE), ND_SUCCESS);
	UINT32 token = mw->lpVtbl->GetRemoteToken(mw);
	TRUTH("the window's token is there as Bind returns", token != 0);
	expect2(&srv, (void *)0x3001, Nd2RequestTypeBind, ND_SUCCESS, 0);
	UINT64 base = (UINT64)(uintptr_t)(srv.buf + 4096);

	/* Write, then a Send fenced behind a Read: the Read completes first. */
	memcpy(cli.buf, "written one-sided", 17);
	ND2_SGE w = sge2(&cli, 0, 17);
	CHECK("Write", cli.qp->lpVtbl->Write(cli.qp, (void *)0x2001, &w, 1, base + 10, token, 0), ND_SUCCESS);
	expect2(&cli, (void *)0x2001, Nd2RequestTypeWrite, ND_SUCCESS, 0);
	TRUTH("the Write landed", memcmp(srv.buf + 4106, "written one-sided", 17) == 0);
	ND2_SGE rd = sge2(&cli, 100, 17);
	ND2_SGE rcv = sge2(&srv, 0, 64);
	CHECK("Receive", srv.qp->lpVtbl->Receive(srv.qp, (void *)0x1001, &rcv, 1), ND_SUCCESS);
	CHECK("Read", cli.qp->lpVtbl->Read(cli.qp, (void *)0x2002, &rd, 1, base + 10, token, 0), ND_SUCCESS);
	ND2_SGE s = sge2(&cli, 200, 4);
	CHECK("Send fenced behind the Read", cli.qp->lpVtbl->Send(cli.qp, (void *)0x2003, &s, 1, ND_OP_FLAG_READ_FENCE), ND_SUCCESS);
	expect2(&cli, (void *)0x2002, Nd2RequestTypeRead, ND_SUCCESS, 0);
	TRUTH("the Read read it", memcmp(cli.buf + 100, "written one-sided", 17) == 0);
	expect2(&cli, (void *)0x2003, Nd2RequestTypeSend, ND_SUCCESS, 0);
	expect2(&srv, (void *)0x1001, Nd2RequestTypeReceive, ND_SUCCESS, 4);

	/* The region's own remote token (MS-MPI's zero-copy path). */
	memcpy(srv.buf + 60000, "region token", 12);
	ND2_SGE rr = sge2(&cli, 300, 12);
	CHECK("Read through the region's remote token", cli.qp->lpVtbl->Read(cli.qp, (void *)0x2004, &rr, 1, (UINT64)(uintptr_t)(srv.buf + 60000), srv.mr->lpVtbl->GetRemoteToken(srv.mr), 0), ND_SUCCESS);
	expect2(&cli, (void *)0x2004, Nd2RequestTypeRead, ND_SUCCESS, 0);
	TRUTH("read through the region", memcmp(cli.buf + 300, "region token", 12) == 0);

	/* Deregistering with a window bound is refused. */
	OVERLAPPED ov = {0};
	HRESULT hr = srv.mr->lpVtbl->Deregister(srv.mr, &ov);
	CHECK("Deregister with a window bound", wait2(srv.mr, &ov, hr), ND_DEVICE_BUSY);
	expectPacket2(&srv, &ov, ND_DEVICE_BUSY);

	/* Invalidate; the window refuses the peer from then on, and the
	 * refusal ends the connection: what else is outstanding flushes. */
	CHECK("Invalidate", srv.qp->lpVtbl->Invalidate(srv.qp, (void *)0x3002, (IUnknown *)mw, 0), ND_SUCCESS);
	expect2(&srv, (void *)0x3002, Nd2RequestTypeInvalidate, ND_SUCCESS, 0);
	CHECK("Receive", srv.qp->lpVtbl->Receive(srv.qp, (void *)0x1002, &rcv, 1), ND_SUCCESS);
	CHECK("Write through the invalidated window", cli.qp->lpVtbl->Write(cli.qp, (void *)0x2005, &w, 1, base, token, 0), ND_SUCCESS);
	expect2(&cli, (void *)0x2005, Nd2RequestTypeWrite, ND_ACCESS_VIOLATION, 0);
	expect2(&srv, (void *)0x1002, Nd2RequestTypeReceive, ND_CANCELED, 0);
	CHECK("Write on the dead connection", cli.qp->lpVtbl->Write(cli.qp, (void *)0x2006, &w, 1, base, token, 0), ND_SUCCESS);
	expect2(&cli, (void *)0x2006, Nd2RequestTypeWrite, ND_CANCELED, 0);

	mw->lpVtbl->Release(mw);
	l->lpVtbl->Release(l);
	close2(&srv);
	close2(&cli);
}

static void reject2(void) {
	section("v2: reject with private data, refused and canceled Connects, connector reuse");
	Side2 srv, cli;
	open2(&srv, 4096);
	open2(&cli, 4096);
	struct sockaddr_in dest;
	IND2Listener *l = listen2(&srv, &dest);
	OVERLAPPED lov = {0}, cov = {0};
	CHECK("GetConnectionRequest", l->lpVtbl->GetConnectionRequest(l, (IUnknown *)srv.conn, &lov), ND_PENDING);
	CHECK("Connect", cli.conn->lpVtbl->Connect(cli.conn, (IUnknown *)cli.qp, (struct sockaddr *)&dest, sizeof dest, 0, 0, NULL, 0, &cov), ND_PENDING);
	expectPacket2(&srv, &lov, ND_SUCCESS);
	CHECK("Reject", srv.conn->lpVtbl->Reject(srv.conn, "go away", 7), ND_SUCCESS);
	CHECK("Connect rejected", wait2(cli.conn, &cov, ND_PENDING), ND_CONNECTION_REFUSED);
	expectPacket2(&cli, &cov, ND_CONNECTION_REFUSED);
	char pd[16];
	ULONG n = sizeof pd;
	CHECK("GetPrivateData after the refusal", cli.conn->lpVtbl->GetPrivateData(cli.conn, pd, &n), ND_SUCCESS);
	TRUTH("the reject's private data", n >= 7 && memcmp(pd, "go away", 7) == 0);

	/* Nobody listens on dest+1. */
	struct sockaddr_in none = dest;
	none.sin_port = htons(ntohs(dest.sin_port) + 1);
	CHECK("Connect to a port nobody listens on", cli.conn->lpVtbl->Connect(cli.conn, (IUnknown *)cli.qp, (struct sockaddr *)&none, sizeof none, 0, 0, NULL, 0, &cov), ND_PENDING);
	CHECK("its result", wait2(cli.conn, &cov, ND_PENDING), ND_CONNECTION_REFUSED);
	expectPacket2(&cli, &cov, ND_CONNECTION_REFUSED);

	/* A Connect the passive side never takes, canceled. */
	CHECK("Connect", cli.conn->lpVtbl->Connect(cli.conn, (IUnknown *)cli.qp, (struct sockaddr *)&dest, sizeof dest, 0, 0, NULL, 0, &cov), ND_PENDING);
	CHECK("CancelOverlappedRequests", cli.conn->lpVtbl->CancelOverlappedRequests(cli.conn), ND_SUCCESS);
	expectPacket2(&cli, &cov, ND_CANCELED);
	CHECK("the canceled Connect", cli.conn->lpVtbl->GetOverlappedResult(cli.conn, &cov, FALSE), ND_CANCELED);

	/* A GetConnectionRequest canceled. */
	IND2Connector *c2 = NULL;
	srv.ad->lpVtbl->CreateConnector(srv.ad, &IID_IND2Connector, srv.file, (void **)&c2);
	CHECK("GetConnectionRequest", l->lpVtbl->GetConnectionRequest(l, (IUnknown *)c2, &lov), ND_PENDING);
	/* The request of the canceled Connect may be handed out first: its
	 * peer has gone, which the passive side sees on Accept. */
	DWORD bytes;
	ULONG_PTR key;
	OVERLAPPED *got = NULL;
	if (GetQueuedCompletionStatus(srv.port, &bytes, &key, &got, 200)) {
		TRUTH("the packet is the GetConnectionRequest's", got == &lov);
		OVERLAPPED aov = {0};
		HRESULT hr = c2->lpVtbl->Accept(c2, (IUnknown *)srv.qp, 0, 0, NULL, 0, &aov);
		if (hr == ND_PENDING) {
			hr = c2->lpVtbl->GetOverlappedResult(c2, &aov, TRUE);
			expectPacket2(&srv, &aov, hr);
		}
		TRUTH("Accept of an abandoned request fails", FAILED(hr));
		c2->lpVtbl->Release(c2);
		srv.ad->lpVtbl->CreateConnector(srv.ad, &IID_IND2Connector, srv.file, (void **)&c2);
		CHECK("GetConnectionRequest", l->lpVtbl->GetConnectionRequest(l, (IUnknown *)c2, &lov), ND_PENDING);
	}
	CHECK("CancelOverlappedRequests on the listener", l->lpVtbl->CancelOverlappedRequests(l), ND_SUCCESS);
	expectPacket2(&srv, &lov, ND_CANCELED);
	CHECK("the canceled GetConnectionRequest", l->lpVtbl->GetOverlappedResult(l, &lov, FALSE), ND_CANCELED);

	/* The same connector and queue pair connect after all that. */
	IND2QueuePair *qp2 = NULL;
	CHECK("CreateQueuePair", srv.ad->lpVtbl->CreateQueuePair(srv.ad, &IID_IND2QueuePair, (IUnknown *)srv.cq, (IUnknown *)srv.cq, (void *)QP_CONTEXT, 8, 8, 1, 1, 0, (void **)&qp2), ND_SUCCESS);
	srv.qp->lpVtbl->Release(srv.qp);
	srv.qp = qp2;
	connect2(&srv, &cli, l, &dest, c2);
	c2->lpVtbl->Release(c2);
	l->lpVtbl->Release(l);
	close2(&srv);
	close2(&cli);
}

static void notify2(void) {
	section("v2: CQ Notify through an event and through the port; cancel order (ndcq); CQ overrun");
	Side2 s;
	open2(&s, 4096);
	IND2CompletionQueue *cq2 = NULL;
	CHECK("CreateCompletionQueue", s.ad->lpVtbl->CreateCompletionQueue(s.ad, &IID_IND2CompletionQueue, s.file, 16, 0, 0, (void **)&cq2), ND_SUCCESS);
	OVERLAPPED ov1 = {0}, ov2 = {0};
	for (int i = 0; i < 100; i++) {
		CHECK("Notify", s.cq->lpVtbl->Notify(s.cq, ND_CQ_NOTIFY_ANY, &ov1), ND_PENDING);
		CHECK("Notify", cq2->lpVtbl->Notify(cq2, ND_CQ_NOTIFY_ANY, &ov2), ND_PENDING);
		if (i % 2 == 0) {
			s.cq->lpVtbl->CancelOverlappedRequests(s.cq);
			cq2->lpVtbl->CancelOverlappedRequests(cq2);
			expectPacket2(&s, &ov1, ND_CANCELED);
			expectPacket2(&s, &ov2, ND_CANCELED);
		} else {
			cq2->lpVtbl->CancelOverlappedRequests(cq2);
			s.cq->lpVtbl->CancelOverlappedRequests(s.cq);
			expectPacket2(&s, &ov2, ND_CANCELED);
			expectPacket2(&s, &ov1, ND_CANCELED);
		}
		CHECK("canceled", s.cq->lpVtbl->GetOverlappedResult(s.cq, &ov1, FALSE), ND_CANCELED);
		CHECK("canceled", cq2->lpVtbl->GetOverlappedResult(cq2, &ov2, FALSE), ND_CANCELED);
	}
	/* Two on one queue: their packets in the order they were made. */
	CHECK("Notify", s.cq->lpVtbl->Notify(s.cq, ND_CQ_NOTIFY_ANY, &ov1), ND_PENDING);
	CHECK("Notify", s.cq->lpVtbl->Notify(s.cq, ND_CQ_NOTIFY_SOLICITED, &ov2), ND_PENDING);
	CHECK("Notify on an OVERLAPPED in use", s.cq->lpVtbl->Notify(s.cq, ND_CQ_NOTIFY_ANY, &ov2), ND_INVALID_PARAMETER_2);
	s.cq->lpVtbl->CancelOverlappedRequests(s.cq);
	expectPacket2(&s, &ov1, ND_CANCELED);
	expectPacket2(&s, &ov2, ND_CANCELED);
	CHECK("Notify of an unknown type", s.cq->lpVtbl->Notify(s.cq, 7, &ov1), ND_INVALID_PARAMETER_1);
	noPacket2(&s);

	/* Overrun: three Receives flushed into a queue of two. */
	IND2CompletionQueue *small = NULL;
	IND2QueuePair *qp = NULL;
	CHECK("CreateCompletionQueue of 2", s.ad->lpVtbl->CreateCompletionQueue(s.ad, &IID_IND2CompletionQueue, s.file, 2, 0, 0, (void **)&small), ND_SUCCESS);
	CHECK("CreateQueuePair", s.ad->lpVtbl->CreateQueuePair(s.ad, &IID_IND2QueuePair, (IUnknown *)small, (IUnknown *)small, NULL, 4, 4, 1, 1, 0, (void **)&qp), ND_SUCCESS);
	ND2_SGE r = sge2(&s, 0, 8);
	for (int i = 0; i < 3; i++)
		CHECK("Receive", qp->lpVtbl->Receive(qp, NULL, &r, 1), ND_SUCCESS);
	OVERLAPPED eov = {0};
	eov.hEvent = s.event;
	CHECK("Notify(ERRORS)", small->lpVtbl->Notify(small, ND_CQ_NOTIFY_ERRORS, &eov), ND_PENDING);
	CHECK("Flush", qp->lpVtbl->Flush(qp), ND_SUCCESS);
	TRUTH("the event is set", WaitForSingleObject(s.event, 10000) == WAIT_OBJECT_0);
	CHECK("Notify(ERRORS) on the overrun queue", small->lpVtbl->GetOverlappedResult(small, &eov, FALSE), ND_BUFFER_OVERFLOW);
	expectPacket2(&s, &eov, ND_BUFFER_OVERFLOW);
	qp->lpVtbl->Release(qp);
	small->lpVtbl->Release(small);
	cq2->lpVtbl->Release(cq2);
	close2(&s);
}

static void srq2(void) {
	section("v2: shared receive queue, Modify, Notify below the threshold");
	Side2 srv, cli;
	open2(&srv, 8192);
	open2(&cli, 8192);
	IND2SharedReceiveQueue *srq = NULL;
	CHECK("CreateSharedReceiveQueue of depth 0", srv.ad->lpVtbl->CreateSharedReceiveQueue(srv.ad, &IID_IND2SharedReceiveQueue, srv.file, 0, 1, 0, 0, 0, (void **)&srq), ND_INVALID_PARAMETER_3);
	CHECK("CreateSharedReceiveQueue", srv.ad->lpVtbl->CreateSharedReceiveQueue(srv.ad, &IID_IND2SharedReceiveQueue, srv.file, 4, 1, 2, 0, 0, (void **)&srq), ND_SUCCESS);
	USHORT group = 9;
	KAFFINITY aff = 0;
	CHECK("GetNotifyAffinity", srq->lpVtbl->GetNotifyAffinity(srq, &group, &aff), ND_SUCCESS);
	TRUTH("an affinity", group == 0 && aff != 0);
	IND2QueuePair *qp = NULL;
	CHECK("CreateQueuePairWithSrq", srv.ad->lpVtbl->CreateQueuePairWithSrq(srv.ad, &IID_IND2QueuePair, (IUnknown *)srv.cq, (IUnknown *)srv.cq, (IUnknown *)srq, (void *)QP_CONTEXT, 8, 1, 0, (void **)&qp), ND_SUCCESS);
	CHECK("Receive on a queue pair with a shared queue", qp->lpVtbl->Receive(qp, NULL, NULL, 0), ND_INVALID_DEVICE_REQUEST);
	srv.qp->lpVtbl->Release(srv.qp);
	srv.qp = qp;
	for (int i = 0; i < 4; i++) {
		ND2_SGE r = sge2(&srv, 64 * i, 64);
		CHECK("SRQ Receive", srq->lpVtbl->Receive(srq, (void *)(uintptr_t)(0x700 + i), &r, 1), ND_SUCCESS);
	}
	ND2_SGE r = sge2(&srv, 1024, 64);
	CHECK("SRQ Receive beyond its depth", srq->lpVtbl->Receive(srq, NULL, &r, 1), ND_NO_MORE_ENTRIES);
	CHECK("Modify below the posted", srq->lpVtbl->Modify(srq, 2, 0), ND_BUFFER_OVERFLOW);
	CHECK("Modify", srq->lpVtbl->Modify(srq, 8, 0), ND_SUCCESS);
	CHECK("SRQ Receive after growing", srq->lpVtbl->Receive(srq, (void *)0x704, &r, 1), ND_SUCCESS);
	struct sockaddr_in dest;
	IND2Listener *l = listen2(&srv, &dest);
	connect2(&srv, &cli, l, &dest, srv.conn);
	OVERLAPPED nov = {0};
	CHECK("SRQ Notify", srq->lpVtbl->Notify(srq, &nov), ND_PENDING);
	ND2_SGE s = sge2(&cli, 0, 9);
	for (int i = 0; i < 3; i++) {
		CHECK("Send", cli.qp->lpVtbl->Send(cli.qp, NULL, &s, 1, 0), ND_SUCCESS);
		expect2(&cli, NULL, Nd2RequestTypeSend, ND_SUCCESS, 0);
		expect2(&srv, (void *)(uintptr_t)(0x700 + i), Nd2RequestTypeReceive, ND_SUCCESS, 9);
	}
	/* 5 posted, 3 taken: 2 wait, not below the threshold of 2. */
	CHECK("SRQ Notify not yet", srq->lpVtbl->GetOverlappedResult(srq, &nov, FALSE), ND_PENDING);
	CHECK("Send", cli.qp->lpVtbl->Send(cli.qp, NULL, &s, 1, 0), ND_SUCCESS);
	expect2(&cli, NULL, Nd2RequestTypeSend, ND_SUCCESS, 0);
	expect2(&srv, (void *)0x703, Nd2RequestTypeReceive, ND_SUCCESS, 9);
	expectPacket2(&srv, &nov, ND_SUCCESS);
	CHECK("SRQ Notify", srq->lpVtbl->GetOverlappedResult(srq, &nov, FALSE), ND_SUCCESS);
	l->lpVtbl->Release(l);
	close2(&srv); /* releases the queue pair, which held the shared queue */
	CHECK("Release the shared queue last", srq->lpVtbl->Release(srq), 0);
	close2(&cli);
}

static void badInput2(void) {
	section("v2: bad input: NULL pointers, sizes, interfaces, forged tokens and objects, released objects");
	Side2 s;
	open2(&s, 4096);
	void *p;
	CHECK("CreateCompletionQueue for a v1 interface", s.ad->lpVtbl->CreateCompletionQueue(s.ad, &IID_INDCompletionQueue, s.file, 4, 0, 0, &p), E_NOINTERFACE);
	CHECK("CreateCompletionQueue without an out pointer", s.ad->lpVtbl->CreateCompletionQueue(s.ad, &IID_IND2CompletionQueue, s.file, 4, 0, 0, NULL), ND_INVALID_PARAMETER_6);
	CHECK("CreateCompletionQueue of depth 0", s.ad->lpVtbl->CreateCompletionQueue(s.ad, &IID_IND2CompletionQueue, s.file, 0, 0, 0, &p), ND_INVALID_PARAMETER_3);
	CHECK("CreateCompletionQueue on a handle not the adapter's", s.ad->lpVtbl->CreateCompletionQueue(s.ad, &IID_IND2CompletionQueue, s.event, 4, 0, 0, &p), ND_INVALID_PARAMETER_2);
	CHECK("CreateQueuePair with a region for a queue", s.ad->lpVtbl->CreateQueuePair(s.ad, &IID_IND2QueuePair, (IUnknown *)s.mr, (IUnknown *)s.cq, NULL, 4, 4, 1, 1, 0, &p), ND_INVALID_PARAMETER_2);
	CHECK("CreateQueuePair with a forged pointer", s.ad->lpVtbl->CreateQueuePair(s.ad, &IID_IND2QueuePair, (IUnknown *)s.cq, (IUnknown *)&p, NULL, 4, 4, 1, 1, 0, &p), ND_INVALID_PARAMETER_3);
	CHECK("CreateQueuePair beyond the depth", s.ad->lpVtbl->CreateQueuePair(s.ad, &IID_IND2QueuePair, (IUnknown *)s.cq, (IUnknown *)s.cq, NULL, 0x7fffffff, 4, 1, 1, 0, &p), ND_INVALID_PARAMETER_5);
	CHECK("CreateQueuePair beyond the inline size", s.ad->lpVtbl->CreateQueuePair(s.ad, &IID_IND2QueuePair, (IUnknown *)s.cq, (IUnknown *)s.cq, NULL, 4, 4, 1, 1, 1 << 24, &p), ND_INVALID_PARAMETER_9);
	IND2MemoryRegion *mr = NULL;
	s.ad->lpVtbl->CreateMemoryRegion(s.ad, &IID_IND2MemoryRegion, s.file, (void **)&mr);
	OVERLAPPED ov = {0};
	CHECK("Register(NULL)", mr->lpVtbl->Register(mr, NULL, 10, 0, &ov), ND_INVALID_PARAMETER);
	CHECK("Register of 0 bytes", mr->lpVtbl->Register(mr, s.buf, 0, 0, &ov), ND_INVALID_BUFFER_SIZE);
	CHECK("Register with an unknown flag", mr->lpVtbl->Register(mr, s.buf, 10, 0x40, &ov), ND_INVALID_PARAMETER_3);
	CHECK("Register without an OVERLAPPED", mr->lpVtbl->Register(mr, s.buf, 10, 0, NULL), ND_INVALID_PARAMETER_4);
	char *reserved = VirtualAlloc(NULL, 65536, MEM_RESERVE, PAGE_NOACCESS);
	CHECK("Register of memory not committed", mr->lpVtbl->Register(mr, reserved, 4096, 0, &ov), ND_ACCESS_VIOLATION);
	VirtualFree(reserved, 0, MEM_RELEASE);
	CHECK("Deregister of a region not registered", mr->lpVtbl->Deregister(mr, &ov), ND_INVALID_DEVICE_STATE);
	CHECK("GetLocalToken of a region not registered", mr->lpVtbl->GetLocalToken(mr), 0);
	IND2MemoryWindow *mw = NULL;
	s.ad->lpVtbl->CreateMemoryWindow(s.ad, &IID_IND2MemoryWindow, (void **)&mw);
	CHECK("Bind in a region not registered", s.qp->lpVtbl->Bind(s.qp, NULL, (IUnknown *)mr, (IUnknown *)mw, s.buf, 8, ND_OP_FLAG_ALLOW_READ), ND_INVALID_PARAMETER_2);
	CHECK("Bind with a window for a region", s.qp->lpVtbl->Bind(s.qp, NULL, (IUnknown *)s.mr, (IUnknown *)s.mr, s.buf, 8, ND_OP_FLAG_ALLOW_READ), ND_INVALID_PARAMETER_3);
	CHECK("Send unconnected", s.qp->lpVtbl->Send(s.qp, NULL, NULL, 0, 0), ND_CONNECTION_INVALID);
	ND2_SGE many[5];
	memset(many, 0, sizeof many);
	CHECK("Receive of 5 entries of 4", s.qp->lpVtbl->Receive(s.qp, NULL, many, 5), ND_DATA_OVERRUN);
	CHECK("Receive with entries at NULL", s.qp->lpVtbl->Receive(s.qp, NULL, NULL, 1), ND_INVALID_PARAMETER_2);
	ND2_SGE at0 = {NULL, 16, s.token};
	CHECK("Receive into NULL", s.qp->lpVtbl->Receive(s.qp, NULL, &at0, 1), ND_ACCESS_VIOLATION);
	/* A forged token: the Receive is taken, and fails when used. */
	ND2_SGE forged = {s.buf, 16, 0xfffff};
	CHECK("Receive with a forged token", s.qp->lpVtbl->Receive(s.qp, (void *)0x77, &forged, 1), ND_SUCCESS);
	CHECK("Flush", s.qp->lpVtbl->Flush(s.qp), ND_SUCCESS);
	expect2(&s, (void *)0x77, Nd2RequestTypeReceive, ND_CANCELED, 0);
	ULONG n;
	CHECK("GetPrivateData without a size", s.conn->lpVtbl->GetPrivateData(s.conn, NULL, NULL), ND_INVALID_PARAMETER_2);
	CHECK("GetLocalAddress unconnected", s.conn->lpVtbl->GetLocalAddress(s.conn, NULL, &n), ND_CONNECTION_INVALID);
	CHECK("Accept without a request", s.conn->lpVtbl->Accept(s.conn, (IUnknown *)s.qp, 0, 0, NULL, 0, &ov), ND_CONNECTION_INVALID);
	CHECK("Connect without a queue pair", s.conn->lpVtbl->Connect(s.conn, NULL, (struct sockaddr *)&localAddr, sizeof localAddr, 0, 0, NULL, 0, &ov), ND_INVALID_PARAMETER_1);
	CHECK("Connect with too much private data", s.conn->lpVtbl->Connect(s.conn, (IUnknown *)s.qp, (struct sockaddr *)&localAddr, sizeof localAddr, 0, 0, s.buf, 4000, &ov), ND_INVALID_BUFFER_SIZE);
	CHECK("GetOverlappedResult of an OVERLAPPED never used", s.cq->lpVtbl->GetOverlappedResult(s.cq, &ov, FALSE), ND_INVALID_PARAMETER_1);
	/* A released object: calls through its pointer find nothing. */
	CHECK("Release the window", mw->lpVtbl->Release(mw), 0);
	CHECK("AddRef of a released object", mw->lpVtbl->AddRef(mw), 0);
	CHECK("Release of a released object", mw->lpVtbl->Release(mw), 0);
	CHECK("GetRemoteToken of a released window", mw->lpVtbl->GetRemoteToken(mw), 0);
	CHECK("Release the region", mr->lpVtbl->Release(mr), 0);
	CHECK("Register on a released region", mr->lpVtbl->Register(mr, s.buf, 10, 0, &ov), ND_INVALID_HANDLE);
	CHECK("QueryInterface of a released region", mr->lpVtbl->QueryInterface(mr, &IID_IUnknown, &p), ND_INVALID_HANDLE);
	close2(&s);
}

static void releaseOrder2(void) {
	section("v2: objects released in any order, with requests pending");
	/* parents first; children first; interleaved */
	static const int seq[3][6] = {{0, 1, 4, 5, 3, 2}, {2, 3, 5, 4, 1, 0}, {3, 0, 2, 1, 5, 4}};
	for (int order = 0; order < 3; order++) {
		Side2 srv, cli;
		open2(&srv, 4096);
		open2(&cli, 4096);
		struct sockaddr_in dest;
		IND2Listener *l = listen2(&srv, &dest);
		connect2(&srv, &cli, l, &dest, srv.conn);
		ND2_SGE r = sge2(&srv, 0, 64);
		CHECK("Receive", srv.qp->lpVtbl->Receive(srv.qp, NULL, &r, 1), ND_SUCCESS);
		OVERLAPPED nov = {0}, dov = {0};
		CHECK("Notify", srv.cq->lpVtbl->Notify(srv.cq, ND_CQ_NOTIFY_ERRORS, &nov), ND_PENDING);
		CHECK("NotifyDisconnect", srv.conn->lpVtbl->NotifyDisconnect(srv.conn, &dov), ND_PENDING);
		IUnknown *objs[6] = {(IUnknown *)srv.ad, (IUnknown *)srv.cq, (IUnknown *)srv.qp, (IUnknown *)srv.conn, (IUnknown *)srv.mr, (IUnknown *)l};
		for (int i = 0; i < 6; i++)
			CHECK("Release", objs[seq[order][i]]->lpVtbl->Release(objs[seq[order][i]]), 0);
		/* The pending requests completed: the queue's Notify canceled,
		 * NotifyDisconnect canceled or fired (the connection ended);
		 * their packets come in no set order. */
		int seen = 0;
		for (int i = 0; i < 2; i++) {
			DWORD bytes;
			ULONG_PTR key;
			OVERLAPPED *got = NULL;
			GetQueuedCompletionStatus(srv.port, &bytes, &key, &got, 10000);
			seen |= got == &nov ? 1 : got == &dov ? 2 : 4;
		}
		CHECK("both pending requests completed", seen, 3);
		CloseHandle(srv.file);
		CloseHandle(srv.port);
		CloseHandle(srv.event);
		VirtualFree(srv.buf, 0, MEM_RELEASE);
		close2(&cli);
	}
}

void testV2(void) {
	discovery2();
	datapath2();
	memory2();
	reject2();
	notify2();
	srq2();
	badInput2();
	releaseOrder2();
}
