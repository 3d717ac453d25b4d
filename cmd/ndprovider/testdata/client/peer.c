/*
 * peer.c: a peer that dies. The client starts a copy of itself (-peer) that
 * connects over ND v2, sends one message and waits; the client kills it
 * and checks that the connection's end reaches it: NotifyDisconnect
 * completes and the Receives posted complete (ND_CANCELED), within a
 * bound, and nothing hangs.
 */
#include "side2.h"

extern const char *dllPath, *transportName;

int peerChild(int argc, char **argv) {
	/* ndclient -peer DLL tcp|shm ADDRESS PORT */
	if (argc < 6)
		return 2;
	HMODULE dll = LoadLibraryA(argv[2]);
	if (dll == NULL)
		return 3;
	getClassObject = (NDABI_DLLGETCLASSOBJECT)(void *)GetProcAddress(dll, "DllGetClassObject");
	static const GUID shm = {0x32b0e7b8, 0xf7e4, 0x4b8f, {0x87, 0x6b, 0x21, 0x12, 0xaf, 0xec, 0x65, 0x4b}};
	static const GUID tcp = {0xe3e889f7, 0xb1d8, 0x47be, {0xa5, 0xc7, 0x59, 0xe5, 0xa4, 0xd8, 0x60, 0x84}};
	providerClass = strcmp(argv[3], "shm") == 0 ? shm : tcp;
	WSADATA wsa;
	WSAStartup(MAKEWORD(2, 2), &wsa);
	localAddr.sin_family = AF_INET;
	localAddr.sin_addr.s_addr = inet_addr(argv[4]);
	struct sockaddr_in dest = addrWithPort((uint16_t)atoi(argv[5]));
	Side2 s;
	open2(&s, 4096);
	OVERLAPPED ov = {0};
	HRESULT hr = s.conn->lpVtbl->Connect(s.conn, (IUnknown *)s.qp, (struct sockaddr *)&dest, sizeof dest, 0, 0, NULL, 0, &ov);
	if (wait2(s.conn, &ov, hr) != ND_SUCCESS)
		return 4;
	expectPacket2(&s, &ov, ND_SUCCESS);
	hr = s.conn->lpVtbl->CompleteConnect(s.conn, &ov);
	if (wait2(s.conn, &ov, hr) != ND_SUCCESS)
		return 5;
	expectPacket2(&s, &ov, ND_SUCCESS);
	memcpy(s.buf, "alive", 5);
	ND2_SGE sge = sge2(&s, 0, 5);
	if (s.qp->lpVtbl->Send(s.qp, NULL, &sge, 1, 0) != ND_SUCCESS)
		return 6;
	expect2(&s, NULL, Nd2RequestTypeSend, ND_SUCCESS, 0);
	Sleep(INFINITE); /* until killed */
	return 0;
}

void testPeerDeath(const char *self) {
	section("v2: a peer process killed with the connection up");
	Side2 srv;
	open2(&srv, 4096);
	struct sockaddr_in dest;
	IND2Listener *l = listen2(&srv, &dest);
	OVERLAPPED lov = {0}, aov = {0}, nov = {0};
	CHECK("GetConnectionRequest", l->lpVtbl->GetConnectionRequest(l, (IUnknown *)srv.conn, &lov), ND_PENDING);
	char cmd[1024];
	snprintf(cmd, sizeof cmd, "\"%s\" -peer \"%s\" %s %s %u", self, dllPath, transportName, inet_ntoa(localAddr.sin_addr), ntohs(dest.sin_port));
	STARTUPINFOA si = {sizeof si};
	PROCESS_INFORMATION pi;
	if (!CreateProcessA(NULL, cmd, NULL, NULL, FALSE, 0, NULL, NULL, &si, &pi)) {
		TRUTH("the peer process started", 0);
		return;
	}
	expectPacket2(&srv, &lov, ND_SUCCESS);
	CHECK("GetConnectionRequest", l->lpVtbl->GetOverlappedResult(l, &lov, FALSE), ND_SUCCESS);
	ND2_SGE r = sge2(&srv, 0, 64);
	CHECK("Receive", srv.qp->lpVtbl->Receive(srv.qp, (void *)1, &r, 1), ND_SUCCESS);
	CHECK("Receive", srv.qp->lpVtbl->Receive(srv.qp, (void *)2, &r, 1), ND_SUCCESS);
	CHECK("Accept", srv.conn->lpVtbl->Accept(srv.conn, (IUnknown *)srv.qp, 0, 0, NULL, 0, &aov), ND_PENDING);
	expectPacket2(&srv, &aov, ND_SUCCESS);
	CHECK("Accept's result", srv.conn->lpVtbl->GetOverlappedResult(srv.conn, &aov, FALSE), ND_SUCCESS);
	expect2(&srv, (void *)1, Nd2RequestTypeReceive, ND_SUCCESS, 5);
	TRUTH("the peer's message", memcmp(srv.buf, "alive", 5) == 0);
	CHECK("NotifyDisconnect", srv.conn->lpVtbl->NotifyDisconnect(srv.conn, &nov), ND_PENDING);
	TerminateProcess(pi.hProcess, 9);
	WaitForSingleObject(pi.hProcess, 10000);
	CloseHandle(pi.hProcess);
	CloseHandle(pi.hThread);
	DWORD bytes;
	ULONG_PTR key;
	OVERLAPPED *got = NULL;
	GetQueuedCompletionStatus(srv.port, &bytes, &key, &got, 25000);
	if (got == NULL && strcmp(transportName, "tcp") == 0) {
		/* Wine 8 does not always close a killed process's sockets (no
		 * FIN leaves; docs/windows.md): nothing can see the end. */
		printf("SKIP: the killed peer's TCP connection stayed open (Wine keeps a killed process's socket, sometimes)\n");
		srv.conn->lpVtbl->CancelOverlappedRequests(srv.conn);
		expectPacket2(&srv, &nov, ND_CANCELED);
	} else {
		TRUTH("NotifyDisconnect's packet after the peer died", got == &nov);
		CHECK("NotifyDisconnect's result", srv.conn->lpVtbl->GetOverlappedResult(srv.conn, &nov, FALSE), ND_SUCCESS);
		ND2_RESULT res = reap2(&srv);
		TRUTH("the Receive still posted completed with an error", res.RequestContext == (void *)2 && res.Status != ND_SUCCESS);
	}
	l->lpVtbl->Release(l);
	close2(&srv);
}
