//go:build windows && cgo

// The DLL's own exports, with the types windows.h gives them; the Go
// functions behind them are in dll.go.

#include <winsock2.h>
#include <windows.h>
#include "_cgo_export.h"

__declspec(dllexport) HRESULT STDAPICALLTYPE DllGetClassObject(REFCLSID clsid, REFIID iid, LPVOID *ppv) {
	return gdDllGetClassObject((void *)clsid, (void *)iid, (void *)ppv);
}

__declspec(dllexport) HRESULT STDAPICALLTYPE DllCanUnloadNow(void) {
	return gdDllCanUnloadNow();
}

// WSPStartup answers WSASYSNOTREADY: the catalog entries of an ND provider
// are not sockets, and Winsock must never take the DLL for a socket
// provider.
__declspec(dllexport) int WINAPI WSPStartup(WORD version, void *data, void *info, void *upcall, void *procs) {
	return WSASYSNOTREADY;
}

// gdPinModule keeps the DLL loaded for the life of the process: the Go
// runtime in it cannot be unloaded.
void gdPinModule(void) {
	HMODULE h;
	GetModuleHandleExW(GET_MODULE_HANDLE_EX_FLAG_FROM_ADDRESS | GET_MODULE_HANDLE_EX_FLAG_PIN,
		(LPCWSTR)(void *)gdPinModule, &h);
}
