/*
 * ndclient: the test client of godirect's ND provider DLL.
 *
 *   ndclient.exe DLL tcp|shm [ADDRESS]
 *
 * loads DLL by path (LoadLibrary, DllGetClassObject), takes the class id of
 * the transport named, and runs every case over ADDRESS (default
 * 127.0.0.1), both sides of each connection in this process (the
 * peer-death case starts a copy of itself as the peer). It prints each
 * failed check and ends with "N checks, M failed"; its exit status is 0 only
 * if nothing failed.
 */
#include "client.h"

NDABI_DLLGETCLASSOBJECT getClassObject;
NDABI_DLLCANUNLOADNOW canUnloadNow;
GUID providerClass;
struct sockaddr_in localAddr;
const char *dllPath, *transportName;
int failures, checks;
static const char *current = "";

static const GUID tcpClass = {0xe3e889f7, 0xb1d8, 0x47be, {0xa5, 0xc7, 0x59, 0xe5, 0xa4, 0xd8, 0x60, 0x84}};
static const GUID shmClass = {0x32b0e7b8, 0xf7e4, 0x4b8f, {0x87, 0x6b, 0x21, 0x12, 0xaf, 0xec, 0x65, 0x4b}};

void check(const char *file, int line, const char *what, HRESULT got, HRESULT want) {
	checks++;
	if (got != want) {
		failures++;
		printf("FAIL %s: %s:%d: %s = 0x%08lx, want 0x%08lx\n", current, file, line, what, (unsigned long)got, (unsigned long)want);
		fflush(stdout);
	}
}

void section(const char *name) {
	current = name;
	printf("== %s\n", name);
	fflush(stdout);
}

struct sockaddr_in addrWithPort(uint16_t port) {
	struct sockaddr_in a = localAddr;
	a.sin_port = htons(port);
	return a;
}

HRESULT wait2(void *obj, OVERLAPPED *ov, HRESULT hr) {
	if (hr != ND_PENDING)
		return hr;
	IND2Overlapped *o = obj;
	return o->lpVtbl->GetOverlappedResult(o, ov, TRUE);
}

HRESULT wait1(void *obj, OVERLAPPED *ov, HRESULT hr) {
	if (hr != ND_PENDING)
		return hr;
	INDOverlapped *o = obj;
	SIZE_T bytes = 99;
	hr = o->lpVtbl->GetOverlappedResult(o, ov, &bytes, TRUE);
	if (bytes != 0)
		check(__FILE__, __LINE__, "GetOverlappedResult's byte count", (HRESULT)bytes, 0);
	return hr;
}

int main(int argc, char **argv) {
	setvbuf(stdout, NULL, _IONBF, 0);
	if (argc >= 2 && strcmp(argv[1], "-peer") == 0)
		return peerChild(argc, argv);
	if (argc < 3) {
		fprintf(stderr, "usage: ndclient DLL tcp|shm [ADDRESS]\n");
		return 2;
	}
	HMODULE dll = LoadLibraryA(argv[1]);
	if (dll == NULL) {
		printf("LoadLibrary(%s) failed: %lu\n", argv[1], GetLastError());
		return 1;
	}
	getClassObject = (NDABI_DLLGETCLASSOBJECT)(void *)GetProcAddress(dll, "DllGetClassObject");
	canUnloadNow = (NDABI_DLLCANUNLOADNOW)(void *)GetProcAddress(dll, "DllCanUnloadNow");
	if (getClassObject == NULL || canUnloadNow == NULL) {
		printf("the DLL does not export DllGetClassObject and DllCanUnloadNow\n");
		return 1;
	}
	providerClass = strcmp(argv[2], "shm") == 0 ? shmClass : tcpClass;
	dllPath = argv[1];
	transportName = argv[2];
	WSADATA wsa;
	WSAStartup(MAKEWORD(2, 2), &wsa);
	localAddr.sin_family = AF_INET;
	localAddr.sin_addr.s_addr = inet_addr(argc > 3 ? argv[3] : "127.0.0.1");

	section("DllCanUnloadNow before any object");
	CHECK("DllCanUnloadNow", canUnloadNow(), S_OK);
	testV2();
	testV1();
	testMsmpiV2();
	testMsmpiV1();
	testPeerDeath(argv[0]);
	section("DllCanUnloadNow after every object was released");
	HRESULT hr = S_FALSE;
	for (int i = 0; i < 500 && hr != S_OK; i++) {
		hr = canUnloadNow();
		if (hr != S_OK)
			Sleep(10); /* objects go as their last pending requests end */
	}
	CHECK("DllCanUnloadNow", hr, S_OK);
	printf("%s over %s: %d checks, %d failed\n", argv[1], argv[2], checks, failures);
	return failures == 0 ? 0 : 1;
}
