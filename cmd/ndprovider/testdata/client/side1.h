/* side1.h: one side of an ND v1 connection, as the cases use it. */
#ifndef SIDE1_H
#define SIDE1_H

#include "client.h"

#define KEY1 0x17

typedef struct Side1 {
	INDAdapter *ad;
	HANDLE port;  /* bound to the adapter's file with KEY1 */
	HANDLE event; /* an auto-reset event for the requests waited for */
	INDCompletionQueue *cq;
	INDConnector *conn;
	INDEndpoint *ep; /* 32 deep, 4 SGEs, read limits 4 */
	char *buf;
	size_t len;
	ND_MR_HANDLE mr;
} Side1;

INDProvider *provider1(void);
void open1(Side1 *s, size_t len);
void close1(Side1 *s);
ND_SGE sge1(Side1 *s, size_t off, SIZE_T n);
void expectPacket1(Side1 *s, OVERLAPPED *ov, HRESULT st);
void noPacket1(Side1 *s);
/* reap1 takes one completion, waiting with Notify when there is none. */
ND_RESULT *reap1(Side1 *s);
void expect1(Side1 *s, ND_RESULT *r, HRESULT st, SIZE_T bytes);
/* listen1 listens on an assigned port (network order in *port). */
INDListen *listen1(Side1 *s, USHORT *port);
/* connect1 connects cli's endpoint to srv's listener l through srv.conn. */
void connect1(Side1 *srv, Side1 *cli, INDListen *l, USHORT port);

#endif
