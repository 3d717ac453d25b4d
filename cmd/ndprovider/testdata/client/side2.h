/* side2.h: one side of an ND v2 connection, as the cases use it. */
#ifndef SIDE2_H
#define SIDE2_H

#include "client.h"

#define QP_CONTEXT 0x5151
#define KEY2 0x42

typedef struct Side2 {
	IND2Adapter *ad;
	HANDLE file;  /* CreateOverlappedFile's, bound to port with KEY2 */
	HANDLE port;  /* the side's I/O completion port */
	HANDLE event; /* an auto-reset event for the requests waited for */
	IND2CompletionQueue *cq;
	IND2QueuePair *qp; /* context QP_CONTEXT, 64 deep, 4 SGEs, 128 inline */
	IND2Connector *conn;
	IND2MemoryRegion *mr; /* buf, registered for local and remote access */
	char *buf;
	size_t len;
	UINT32 token;
} Side2;

IND2Provider *provider2(void);
void open2(Side2 *s, size_t len);
void close2(Side2 *s);
ND2_SGE sge2(Side2 *s, size_t off, ULONG n);
/* expectPacket2 takes the next packet of s's port and checks it is ov's,
 * with the class of st. */
void expectPacket2(Side2 *s, OVERLAPPED *ov, HRESULT st);
void noPacket2(Side2 *s);
/* reap2 takes one completion, waiting with Notify when there is none. */
ND2_RESULT reap2(Side2 *s);
void expect2(Side2 *s, void *ctx, ND2_REQUEST_TYPE typ, HRESULT st, ULONG bytes);
/* listen2 makes a listener on localAddr, port assigned. */
IND2Listener *listen2(Side2 *s, struct sockaddr_in *bound);
/* connect2 connects cli to srv's listener l, the request taken by passive. */
void connect2(Side2 *srv, Side2 *cli, IND2Listener *l, struct sockaddr_in *dest, IND2Connector *passive);

#endif
