/*
 * bcryptprimitives.dll for Wine 8, which has none: Go's runtime loads it
 * from system32 at start for ProcessPrng, its source of random bytes.
 * ProcessPrng fills a buffer from the system's generator and, as on
 * Windows, always succeeds; here it forwards to BCryptGenRandom.
 *
 * x86_64-w64-mingw32-gcc -shared -O2 -o bcryptprimitives.dll bcryptprimitives.c -lbcrypt
 */
#include <windows.h>
#include <bcrypt.h>

__declspec(dllexport) BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T len)
{
	while (len > 0) {
		ULONG n = len > 0x40000000 ? 0x40000000 : (ULONG)len;
		if (!BCRYPT_SUCCESS(BCryptGenRandom(NULL, data, n, BCRYPT_USE_SYSTEM_PREFERRED_RNG)))
			return FALSE;
		data += n;
		len -= n;
	}
	return TRUE;
}
