/*
 * The test client of godirect's ND provider DLL: an ND consumer written
 * against internal/ndabi/ndabi.h that loads the DLL by path and drives ND v1
 * and ND v2 through every interface, checking each call's exact HRESULT,
 * status and bytes. See main.c.
 */
#ifndef NDCLIENT_H
#define NDCLIENT_H

#include "ndabi.h"
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

extern NDABI_DLLGETCLASSOBJECT getClassObject;
extern NDABI_DLLCANUNLOADNOW canUnloadNow;
extern GUID providerClass;           /* the transport under test */
extern struct sockaddr_in localAddr; /* the address both sides use (port 0) */
extern int failures, checks;

/* check fails the case (and counts it) unless got == want. */
#define CHECK(what, got, want) check(__FILE__, __LINE__, what, (HRESULT)(got), (HRESULT)(want))
void check(const char *file, int line, const char *what, HRESULT got, HRESULT want);
/* TRUE checks a condition. */
#define TRUTH(what, cond) check(__FILE__, __LINE__, what, (cond) ? 1 : 0, 1)

/* section names the case under way in the output. */
void section(const char *name);

/* The address of localAddr with port (host order). */
struct sockaddr_in addrWithPort(uint16_t port);

/* waitFor returns the final status of an overlapped request that a call
 * returned hr for: hr itself unless it is ND_PENDING, else
 * GetOverlappedResult(ov, TRUE) on obj (an IND2Overlapped). */
HRESULT wait2(void *obj, OVERLAPPED *ov, HRESULT hr);
/* The same for ND v1 objects (INDOverlapped). */
HRESULT wait1(void *obj, OVERLAPPED *ov, HRESULT hr);

/* The two versions' cases and MS-MPI's call order. */
void testV2(void);
void testV1(void);
void testMsmpiV2(void);
void testMsmpiV1(void);
void testPeerDeath(const char *self);
int peerChild(int argc, char **argv);

#endif
