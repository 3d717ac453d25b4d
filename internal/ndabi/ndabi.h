/*
 * ndabi.h: the binary interface of Network Direct (ndspi.h, nddef.h,
 * ndstatus.h) as godirect declares it, in C, for the C side of the
 * provider DLL (cmd/ndprovider) and for C consumers written against it (the
 * test client in cmd/ndprovider/testdata). Package ndabi declares the same
 * interface in Go; its tests compile this header with a C compiler and
 * check every structure offset, every vtable slot and every GUID against the
 * Go declarations.
 *
 * The names are ND's own (they are the interface), in C's object form: an
 * interface is a struct whose first member points to its table of methods
 * (lpVtbl), each method taking the object as its first argument. Windows
 * x64 (LLP64): ULONG is 4 bytes, SIZE_T and pointers 8.
 */
#ifndef GODIRECT_NDABI_H
#define GODIRECT_NDABI_H

#include <winsock2.h>
#include <ws2tcpip.h>
#include <windows.h>
#include <unknwn.h>

#ifndef STDMETHODCALLTYPE
#define STDMETHODCALLTYPE __stdcall
#endif

/* Versions, flags and request types (nddef.h). */
#define ND_VERSION_1 0x1
#define ND_VERSION_2 0x20000

#define ND_ADAPTER_FLAG_IN_ORDER_DMA_SUPPORTED 0x00000001
#define ND_ADAPTER_FLAG_CQ_INTERRUPT_MODERATION_SUPPORTED 0x00000004
#define ND_ADAPTER_FLAG_MULTI_ENGINE_SUPPORTED 0x00000008
#define ND_ADAPTER_FLAG_CQ_RESIZE_SUPPORTED 0x00000100
#define ND_ADAPTER_FLAG_LOOPBACK_CONNECTIONS_SUPPORTED 0x00010000

#define ND_CQ_NOTIFY_ERRORS 0
#define ND_CQ_NOTIFY_ANY 1
#define ND_CQ_NOTIFY_SOLICITED 2

#define ND_MR_FLAG_ALLOW_LOCAL_WRITE 0x00000001
#define ND_MR_FLAG_ALLOW_REMOTE_READ 0x00000002
#define ND_MR_FLAG_ALLOW_REMOTE_WRITE 0x00000005
#define ND_MR_FLAG_RDMA_READ_SINK 0x00000008
#define ND_MR_FLAG_DO_NOT_SECURE_VM 0x80000000

#define ND_OP_FLAG_SILENT_SUCCESS 0x00000001
#define ND_OP_FLAG_READ_FENCE 0x00000002
#define ND_OP_FLAG_SEND_AND_SOLICIT_EVENT 0x00000004
#define ND_OP_FLAG_ALLOW_READ 0x00000008
#define ND_OP_FLAG_ALLOW_WRITE 0x00000010
#define ND_OP_FLAG_INLINE 0x00000020

typedef enum ND2_REQUEST_TYPE {
	Nd2RequestTypeReceive,
	Nd2RequestTypeSend,
	Nd2RequestTypeBind,
	Nd2RequestTypeInvalidate,
	Nd2RequestTypeRead,
	Nd2RequestTypeWrite
} ND2_REQUEST_TYPE;

/* Statuses (ndstatus.h): NTSTATUS values carried in an HRESULT. */
#define ND_SUCCESS ((HRESULT)0x00000000L)
#define ND_TIMEOUT ((HRESULT)0x00000102L)
#define ND_PENDING ((HRESULT)0x00000103L)
#define ND_BUFFER_OVERFLOW ((HRESULT)0x80000005L)
#define ND_DEVICE_BUSY ((HRESULT)0x80000011L)
#define ND_NO_MORE_ENTRIES ((HRESULT)0x8000001AL)
#define ND_UNSUCCESSFUL ((HRESULT)0xC0000001L)
#define ND_ACCESS_VIOLATION ((HRESULT)0xC0000005L)
#define ND_INVALID_HANDLE ((HRESULT)0xC0000008L)
#define ND_INVALID_DEVICE_REQUEST ((HRESULT)0xC0000010L)
#define ND_INVALID_PARAMETER ((HRESULT)0xC000000DL)
#define ND_NO_MEMORY ((HRESULT)0xC0000017L)
#define ND_INVALID_PARAMETER_MIX ((HRESULT)0xC0000030L)
#define ND_DATA_OVERRUN ((HRESULT)0xC000003CL)
#define ND_SHARING_VIOLATION ((HRESULT)0xC0000043L)
#define ND_INSUFFICIENT_RESOURCES ((HRESULT)0xC000009AL)
#define ND_DEVICE_NOT_READY ((HRESULT)0xC00000A3L)
#define ND_IO_TIMEOUT ((HRESULT)0xC00000B5L)
#define ND_NOT_SUPPORTED ((HRESULT)0xC00000BBL)
#define ND_INTERNAL_ERROR ((HRESULT)0xC00000E5L)
#define ND_INVALID_PARAMETER_1 ((HRESULT)0xC00000EFL)
#define ND_INVALID_PARAMETER_2 ((HRESULT)0xC00000F0L)
#define ND_INVALID_PARAMETER_3 ((HRESULT)0xC00000F1L)
#define ND_INVALID_PARAMETER_4 ((HRESULT)0xC00000F2L)
#define ND_INVALID_PARAMETER_5 ((HRESULT)0xC00000F3L)
#define ND_INVALID_PARAMETER_6 ((HRESULT)0xC00000F4L)
#define ND_INVALID_PARAMETER_7 ((HRESULT)0xC00000F5L)
#define ND_INVALID_PARAMETER_8 ((HRESULT)0xC00000F6L)
#define ND_INVALID_PARAMETER_9 ((HRESULT)0xC00000F7L)
#define ND_INVALID_PARAMETER_10 ((HRESULT)0xC00000F8L)
#define ND_CANCELED ((HRESULT)0xC0000120L)
#define ND_REMOTE_ERROR ((HRESULT)0xC000013DL)
#define ND_INVALID_ADDRESS ((HRESULT)0xC0000141L)
#define ND_INVALID_DEVICE_STATE ((HRESULT)0xC0000184L)
#define ND_INVALID_BUFFER_SIZE ((HRESULT)0xC0000206L)
#define ND_TOO_MANY_ADDRESSES ((HRESULT)0xC0000209L)
#define ND_ADDRESS_ALREADY_EXISTS ((HRESULT)0xC000020AL)
#define ND_CONNECTION_REFUSED ((HRESULT)0xC0000236L)
#define ND_CONNECTION_INVALID ((HRESULT)0xC000023AL)
#define ND_CONNECTION_ACTIVE ((HRESULT)0xC000023BL)
#define ND_NETWORK_UNREACHABLE ((HRESULT)0xC000023CL)
#define ND_HOST_UNREACHABLE ((HRESULT)0xC000023DL)
#define ND_CONNECTION_ABORTED ((HRESULT)0xC0000241L)
#define ND_DEVICE_REMOVED ((HRESULT)0xC00002B6L)
#define ND_LOCAL_LENGTH ND_DATA_OVERRUN
#define ND_INVALIDATION_ERROR ND_INVALID_DEVICE_REQUEST

/* Structures (nddef.h, ndspi.h). */
typedef struct ND2_ADAPTER_INFO {
	ULONG InfoVersion;
	UINT16 VendorId;
	UINT16 DeviceId;
	UINT64 AdapterId;
	SIZE_T MaxRegistrationSize;
	SIZE_T MaxWindowSize;
	ULONG MaxInitiatorSge;
	ULONG MaxReceiveSge;
	ULONG MaxReadSge;
	ULONG MaxTransferLength;
	ULONG MaxInlineDataSize;
	ULONG MaxInboundReadLimit;
	ULONG MaxOutboundReadLimit;
	ULONG MaxReceiveQueueDepth;
	ULONG MaxInitiatorQueueDepth;
	ULONG MaxSharedReceiveQueueDepth;
	ULONG MaxCompletionQueueDepth;
	ULONG InlineRequestThreshold;
	ULONG LargeRequestThreshold;
	ULONG MaxCallerData;
	ULONG MaxCalleeData;
	ULONG AdapterFlags;
} ND2_ADAPTER_INFO;

typedef struct ND2_RESULT {
	HRESULT Status;
	ULONG BytesTransferred;
	VOID *QueuePairContext;
	VOID *RequestContext;
	ND2_REQUEST_TYPE RequestType;
} ND2_RESULT;

typedef struct ND2_SGE {
	VOID *Buffer;
	ULONG BufferLength;
	UINT32 MemoryRegionToken;
} ND2_SGE;

typedef struct ND_ADAPTER_INFO1 {
	UINT32 VendorId;
	UINT32 DeviceId;
	SIZE_T MaxInboundSge;
	SIZE_T MaxInboundRequests;
	SIZE_T MaxInboundLength;
	SIZE_T MaxOutboundSge;
	SIZE_T MaxOutboundRequests;
	SIZE_T MaxOutboundLength;
	SIZE_T MaxInlineData;
	SIZE_T MaxInboundReadLimit;
	SIZE_T MaxOutboundReadLimit;
	SIZE_T MaxCqEntries;
	SIZE_T MaxRegistrationSize;
	SIZE_T MaxWindowSize;
	SIZE_T LargeRequestThreshold;
	SIZE_T MaxCallerData;
	SIZE_T MaxCalleeData;
} ND_ADAPTER_INFO1;

typedef struct ND_RESULT {
	HRESULT Status;
	SIZE_T BytesTransferred;
} ND_RESULT;

#pragma pack(push, 1)
typedef struct ND_MW_DESCRIPTOR {
	UINT64 Base;   /* big-endian */
	UINT64 Length; /* big-endian */
	UINT32 Token;  /* big-endian */
} ND_MW_DESCRIPTOR;
#pragma pack(pop)

typedef struct ND_MR_HANDLE__ *ND_MR_HANDLE;

typedef struct ND_SGE {
	VOID *pAddr;
	SIZE_T Length;
	ND_MR_HANDLE hMr;
} ND_SGE;

/* Interface identifiers (ndspi.h). IND2MemoryWindow and INDMemoryWindow share
 * theirs. */
static const GUID IID_IND2Overlapped = {0xabf72719, 0xb016, 0x4a40, {0xa6, 0xf7, 0x62, 0x27, 0x91, 0xa7, 0x04, 0x4c}};
static const GUID IID_IND2CompletionQueue = {0x20cc445e, 0x64a0, 0x4cbb, {0xaa, 0x75, 0xf6, 0xa7, 0x25, 0x1f, 0xda, 0x9e}};
static const GUID IID_IND2SharedReceiveQueue = {0xaabd67dc, 0x459a, 0x4db1, {0x82, 0x6b, 0x56, 0xcf, 0xcc, 0x27, 0x88, 0x83}};
static const GUID IID_IND2MemoryWindow = {0x070fe1f5, 0x0ab5, 0x4361, {0x88, 0xdb, 0x97, 0x4b, 0xa7, 0x04, 0xd4, 0xb9}};
static const GUID IID_IND2MemoryRegion = {0x55dfea2f, 0xbc56, 0x4982, {0x8a, 0x45, 0x03, 0x01, 0xbe, 0x46, 0xc4, 0x13}};
static const GUID IID_IND2QueuePair = {0xeef2f332, 0xb75d, 0x4063, {0xbc, 0xe3, 0x3a, 0x0b, 0xad, 0x2d, 0x02, 0xce}};
static const GUID IID_IND2Connector = {0x7dd615c4, 0x6b4c, 0x4866, {0x95, 0x0c, 0xf3, 0xb1, 0xd2, 0x5a, 0x53, 0x02}};
static const GUID IID_IND2Listener = {0x65d23d83, 0x3a57, 0x4e02, {0x86, 0xa4, 0x35, 0x01, 0x65, 0xc2, 0xd1, 0x30}};
static const GUID IID_IND2Adapter = {0xd89c798c, 0x4823, 0x4d69, {0x84, 0x6c, 0xdf, 0xdc, 0xcf, 0xf9, 0xe5, 0xf3}};
static const GUID IID_IND2Provider = {0x49eae6c1, 0x76c4, 0x46d0, {0x80, 0x03, 0x5c, 0x2e, 0xaa, 0x2c, 0x9a, 0x8e}};
static const GUID IID_INDOverlapped = {0xc859e15e, 0x75e2, 0x4fe3, {0x8d, 0x6d, 0x0d, 0xff, 0x36, 0xf0, 0x24, 0x42}};
static const GUID IID_INDCompletionQueue = {0x1245a633, 0x2a32, 0x473a, {0x83, 0x0c, 0xe0, 0x5d, 0x1f, 0x86, 0x9d, 0x02}};
static const GUID IID_INDMemoryWindow = {0x070fe1f5, 0x0ab5, 0x4361, {0x88, 0xdb, 0x97, 0x4b, 0xa7, 0x04, 0xd4, 0xb9}};
static const GUID IID_INDEndpoint = {0xdbd00eab, 0xb679, 0x44a9, {0xbd, 0x65, 0xe8, 0x2f, 0x3d, 0xe1, 0x2d, 0x1a}};
static const GUID IID_INDConnector = {0x1bcaf2d1, 0xe274, 0x4aeb, {0xac, 0x57, 0xcd, 0x5d, 0x43, 0x76, 0xe0, 0xb7}};
static const GUID IID_INDListen = {0xbb902588, 0xba3f, 0x4441, {0x9f, 0xe1, 0x3b, 0x67, 0x95, 0xe4, 0xe6, 0x68}};
static const GUID IID_INDAdapter = {0xa023c5a0, 0x5b73, 0x43bc, {0x8d, 0x20, 0x33, 0xaa, 0x07, 0xe9, 0x51, 0x0f}};
static const GUID IID_INDProvider = {0x0c5dd316, 0x5fdf, 0x47e6, {0xb2, 0xd0, 0x2a, 0x6e, 0xda, 0x8d, 0x39, 0xdd}};

/* The interfaces. Every table starts with IUnknown's three methods; the
 * overlapped interfaces add CancelOverlappedRequests and
 * GetOverlappedResult; the interface's own methods follow in ndspi.h's
 * order. */
#define NDABI_IUNKNOWN(T) \
	HRESULT(STDMETHODCALLTYPE *QueryInterface)(T * This, REFIID riid, void **ppvObject); \
	ULONG(STDMETHODCALLTYPE *AddRef)(T * This); \
	ULONG(STDMETHODCALLTYPE *Release)(T * This);
#define NDABI_OVERLAPPED2(T) \
	NDABI_IUNKNOWN(T) \
	HRESULT(STDMETHODCALLTYPE *CancelOverlappedRequests)(T * This); \
	HRESULT(STDMETHODCALLTYPE *GetOverlappedResult)(T * This, OVERLAPPED * pOverlapped, BOOL wait);
#define NDABI_OVERLAPPED1(T) \
	NDABI_IUNKNOWN(T) \
	HRESULT(STDMETHODCALLTYPE *CancelOverlappedRequests)(T * This); \
	HRESULT(STDMETHODCALLTYPE *GetOverlappedResult)(T * This, OVERLAPPED * pOverlapped, SIZE_T * pNumberOfBytesTransferred, BOOL bWait);
#define NDABI_INTERFACE(T) \
	typedef struct T T; \
	struct T { const struct T##Vtbl *lpVtbl; };

/* ND v2 */
NDABI_INTERFACE(IND2Overlapped)
typedef struct IND2OverlappedVtbl {
	NDABI_OVERLAPPED2(IND2Overlapped)
} IND2OverlappedVtbl;

NDABI_INTERFACE(IND2CompletionQueue)
typedef struct IND2CompletionQueueVtbl {
	NDABI_OVERLAPPED2(IND2CompletionQueue)
	HRESULT(STDMETHODCALLTYPE *GetNotifyAffinity)(IND2CompletionQueue *This, USHORT *pGroup, KAFFINITY *pAffinity);
	HRESULT(STDMETHODCALLTYPE *Resize)(IND2CompletionQueue *This, ULONG queueDepth);
	HRESULT(STDMETHODCALLTYPE *Notify)(IND2CompletionQueue *This, ULONG type, OVERLAPPED *pOverlapped);
	ULONG(STDMETHODCALLTYPE *GetResults)(IND2CompletionQueue *This, ND2_RESULT results[], ULONG nResults);
} IND2CompletionQueueVtbl;

NDABI_INTERFACE(IND2SharedReceiveQueue)
typedef struct IND2SharedReceiveQueueVtbl {
	NDABI_OVERLAPPED2(IND2SharedReceiveQueue)
	HRESULT(STDMETHODCALLTYPE *GetNotifyAffinity)(IND2SharedReceiveQueue *This, USHORT *pGroup, KAFFINITY *pAffinity);
	HRESULT(STDMETHODCALLTYPE *Modify)(IND2SharedReceiveQueue *This, ULONG queueDepth, ULONG notifyThreshold);
	HRESULT(STDMETHODCALLTYPE *Notify)(IND2SharedReceiveQueue *This, OVERLAPPED *pOverlapped);
	HRESULT(STDMETHODCALLTYPE *Receive)(IND2SharedReceiveQueue *This, VOID *requestContext, const ND2_SGE sge[], ULONG nSge);
} IND2SharedReceiveQueueVtbl;

NDABI_INTERFACE(IND2MemoryWindow)
typedef struct IND2MemoryWindowVtbl {
	NDABI_IUNKNOWN(IND2MemoryWindow)
	UINT32(STDMETHODCALLTYPE *GetRemoteToken)(IND2MemoryWindow *This);
} IND2MemoryWindowVtbl;

NDABI_INTERFACE(IND2MemoryRegion)
typedef struct IND2MemoryRegionVtbl {
	NDABI_OVERLAPPED2(IND2MemoryRegion)
	HRESULT(STDMETHODCALLTYPE *Register)(IND2MemoryRegion *This, const VOID *pBuffer, SIZE_T cbBuffer, ULONG flags, OVERLAPPED *pOverlapped);
	HRESULT(STDMETHODCALLTYPE *Deregister)(IND2MemoryRegion *This, OVERLAPPED *pOverlapped);
	UINT32(STDMETHODCALLTYPE *GetLocalToken)(IND2MemoryRegion *This);
	UINT32(STDMETHODCALLTYPE *GetRemoteToken)(IND2MemoryRegion *This);
} IND2MemoryRegionVtbl;

NDABI_INTERFACE(IND2QueuePair)
typedef struct IND2QueuePairVtbl {
	NDABI_IUNKNOWN(IND2QueuePair)
	HRESULT(STDMETHODCALLTYPE *Flush)(IND2QueuePair *This);
	HRESULT(STDMETHODCALLTYPE *Send)(IND2QueuePair *This, VOID *requestContext, const ND2_SGE sge[], ULONG nSge, ULONG flags);
	HRESULT(STDMETHODCALLTYPE *Receive)(IND2QueuePair *This, VOID *requestContext, const ND2_SGE sge[], ULONG nSge);
	HRESULT(STDMETHODCALLTYPE *Bind)(IND2QueuePair *This, VOID *requestContext, IUnknown *pMemoryRegion, IUnknown *pMemoryWindow, const VOID *pBuffer, SIZE_T cbBuffer, ULONG flags);
	HRESULT(STDMETHODCALLTYPE *Invalidate)(IND2QueuePair *This, VOID *requestContext, IUnknown *pMemoryWindow, ULONG flags);
	HRESULT(STDMETHODCALLTYPE *Read)(IND2QueuePair *This, VOID *requestContext, const ND2_SGE sge[], ULONG nSge, UINT64 remoteAddress, UINT32 remoteToken, ULONG flags);
	HRESULT(STDMETHODCALLTYPE *Write)(IND2QueuePair *This, VOID *requestContext, const ND2_SGE sge[], ULONG nSge, UINT64 remoteAddress, UINT32 remoteToken, ULONG flags);
} IND2QueuePairVtbl;

NDABI_INTERFACE(IND2Connector)
typedef struct IND2ConnectorVtbl {
	NDABI_OVERLAPPED2(IND2Connector)
	HRESULT(STDMETHODCALLTYPE *Bind)(IND2Connector *This, const struct sockaddr *pAddress, ULONG cbAddress);
	HRESULT(STDMETHODCALLTYPE *Connect)(IND2Connector *This, IUnknown *pQueuePair, const struct sockaddr *pDestAddress, ULONG cbDestAddress, ULONG inboundReadLimit, ULONG outboundReadLimit, const VOID *pPrivateData, ULONG cbPrivateData, OVERLAPPED *pOverlapped);
	HRESULT(STDMETHODCALLTYPE *CompleteConnect)(IND2Connector *This, OVERLAPPED *pOverlapped);
	HRESULT(STDMETHODCALLTYPE *Accept)(IND2Connector *This, IUnknown *pQueuePair, ULONG inboundReadLimit, ULONG outboundReadLimit, const VOID *pPrivateData, ULONG cbPrivateData, OVERLAPPED *pOverlapped);
	HRESULT(STDMETHODCALLTYPE *Reject)(IND2Connector *This, const VOID *pPrivateData, ULONG cbPrivateData);
	HRESULT(STDMETHODCALLTYPE *GetReadLimits)(IND2Connector *This, ULONG *pInboundReadLimit, ULONG *pOutboundReadLimit);
	HRESULT(STDMETHODCALLTYPE *GetPrivateData)(IND2Connector *This, VOID *pPrivateData, ULONG *pcbPrivateData);
	HRESULT(STDMETHODCALLTYPE *GetLocalAddress)(IND2Connector *This, struct sockaddr *pAddress, ULONG *pcbAddress);
	HRESULT(STDMETHODCALLTYPE *GetPeerAddress)(IND2Connector *This, struct sockaddr *pAddress, ULONG *pcbAddress);
	HRESULT(STDMETHODCALLTYPE *NotifyDisconnect)(IND2Connector *This, OVERLAPPED *pOverlapped);
	HRESULT(STDMETHODCALLTYPE *Disconnect)(IND2Connector *This, OVERLAPPED *pOverlapped);
} IND2ConnectorVtbl;

NDABI_INTERFACE(IND2Listener)
typedef struct IND2ListenerVtbl {
	NDABI_OVERLAPPED2(IND2Listener)
	HRESULT(STDMETHODCALLTYPE *Bind)(IND2Listener *This, const struct sockaddr *pAddress, ULONG cbAddress);
	HRESULT(STDMETHODCALLTYPE *Listen)(IND2Listener *This, ULONG backlog);
	HRESULT(STDMETHODCALLTYPE *GetLocalAddress)(IND2Listener *This, struct sockaddr *pAddress, ULONG *pcbAddress);
	HRESULT(STDMETHODCALLTYPE *GetConnectionRequest)(IND2Listener *This, IUnknown *pConnector, OVERLAPPED *pOverlapped);
} IND2ListenerVtbl;

NDABI_INTERFACE(IND2Adapter)
typedef struct IND2AdapterVtbl {
	NDABI_IUNKNOWN(IND2Adapter)
	HRESULT(STDMETHODCALLTYPE *CreateOverlappedFile)(IND2Adapter *This, HANDLE *phOverlappedFile);
	HRESULT(STDMETHODCALLTYPE *Query)(IND2Adapter *This, ND2_ADAPTER_INFO *pInfo, ULONG *pcbInfo);
	HRESULT(STDMETHODCALLTYPE *QueryAddressList)(IND2Adapter *This, SOCKET_ADDRESS_LIST *pAddressList, ULONG *pcbAddressList);
	HRESULT(STDMETHODCALLTYPE *CreateCompletionQueue)(IND2Adapter *This, REFIID iid, HANDLE hOverlappedFile, ULONG queueDepth, USHORT group, KAFFINITY affinity, VOID **ppCompletionQueue);
	HRESULT(STDMETHODCALLTYPE *CreateMemoryRegion)(IND2Adapter *This, REFIID iid, HANDLE hOverlappedFile, VOID **ppMemoryRegion);
	HRESULT(STDMETHODCALLTYPE *CreateMemoryWindow)(IND2Adapter *This, REFIID iid, VOID **ppMemoryWindow);
	HRESULT(STDMETHODCALLTYPE *CreateSharedReceiveQueue)(IND2Adapter *This, REFIID iid, HANDLE hOverlappedFile, ULONG queueDepth, ULONG maxRequestSge, ULONG notifyThreshold, USHORT group, KAFFINITY affinity, VOID **ppSharedReceiveQueue);
	HRESULT(STDMETHODCALLTYPE *CreateQueuePair)(IND2Adapter *This, REFIID iid, IUnknown *pReceiveCompletionQueue, IUnknown *pInitiatorCompletionQueue, VOID *context, ULONG receiveQueueDepth, ULONG initiatorQueueDepth, ULONG maxReceiveRequestSge, ULONG maxInitiatorRequestSge, ULONG inlineDataSize, VOID **ppQueuePair);
	HRESULT(STDMETHODCALLTYPE *CreateQueuePairWithSrq)(IND2Adapter *This, REFIID iid, IUnknown *pReceiveCompletionQueue, IUnknown *pInitiatorCompletionQueue, IUnknown *pSharedReceiveQueue, VOID *context, ULONG initiatorQueueDepth, ULONG maxInitiatorRequestSge, ULONG inlineDataSize, VOID **ppQueuePair);
	HRESULT(STDMETHODCALLTYPE *CreateConnector)(IND2Adapter *This, REFIID iid, HANDLE hOverlappedFile, VOID **ppConnector);
	HRESULT(STDMETHODCALLTYPE *CreateListener)(IND2Adapter *This, REFIID iid, HANDLE hOverlappedFile, VOID **ppListener);
} IND2AdapterVtbl;

NDABI_INTERFACE(IND2Provider)
typedef struct IND2ProviderVtbl {
	NDABI_IUNKNOWN(IND2Provider)
	HRESULT(STDMETHODCALLTYPE *QueryAddressList)(IND2Provider *This, SOCKET_ADDRESS_LIST *pAddressList, ULONG *pcbAddressList);
	HRESULT(STDMETHODCALLTYPE *ResolveAddress)(IND2Provider *This, const struct sockaddr *pAddress, ULONG cbAddress, UINT64 *pAdapterId);
	HRESULT(STDMETHODCALLTYPE *OpenAdapter)(IND2Provider *This, REFIID iid, UINT64 adapterId, VOID **ppAdapter);
} IND2ProviderVtbl;

/* ND v1 */
NDABI_INTERFACE(INDOverlapped)
typedef struct INDOverlappedVtbl {
	NDABI_OVERLAPPED1(INDOverlapped)
} INDOverlappedVtbl;

NDABI_INTERFACE(INDCompletionQueue)
typedef struct INDCompletionQueueVtbl {
	NDABI_OVERLAPPED1(INDCompletionQueue)
	HRESULT(STDMETHODCALLTYPE *Resize)(INDCompletionQueue *This, SIZE_T nEntries);
	HRESULT(STDMETHODCALLTYPE *Notify)(INDCompletionQueue *This, DWORD Type, OVERLAPPED *pOverlapped);
	SIZE_T(STDMETHODCALLTYPE *GetResults)(INDCompletionQueue *This, ND_RESULT *pResults[], SIZE_T nResults);
} INDCompletionQueueVtbl;

NDABI_INTERFACE(INDMemoryWindow)
typedef struct INDMemoryWindowVtbl {
	NDABI_IUNKNOWN(INDMemoryWindow)
} INDMemoryWindowVtbl;

NDABI_INTERFACE(INDEndpoint)
typedef struct INDEndpointVtbl {
	NDABI_IUNKNOWN(INDEndpoint)
	HRESULT(STDMETHODCALLTYPE *Flush)(INDEndpoint *This);
	void(STDMETHODCALLTYPE *StartRequestBatch)(INDEndpoint *This);
	void(STDMETHODCALLTYPE *SubmitRequestBatch)(INDEndpoint *This);
	HRESULT(STDMETHODCALLTYPE *Send)(INDEndpoint *This, ND_RESULT *pResult, const ND_SGE *pSgl, SIZE_T nSge, DWORD Flags);
	HRESULT(STDMETHODCALLTYPE *SendAndInvalidate)(INDEndpoint *This, ND_RESULT *pResult, const ND_SGE *pSgl, SIZE_T nSge, const ND_MW_DESCRIPTOR *pRemoteMwDescriptor, DWORD Flags);
	HRESULT(STDMETHODCALLTYPE *Receive)(INDEndpoint *This, ND_RESULT *pResult, const ND_SGE *pSgl, SIZE_T nSge);
	HRESULT(STDMETHODCALLTYPE *Bind)(INDEndpoint *This, ND_RESULT *pResult, ND_MR_HANDLE hMr, INDMemoryWindow *pMw, const void *pBuffer, SIZE_T BufferSize, DWORD Flags, ND_MW_DESCRIPTOR *pMwDescriptor);
	HRESULT(STDMETHODCALLTYPE *Invalidate)(INDEndpoint *This, ND_RESULT *pResult, INDMemoryWindow *pMw, DWORD Flags);
	HRESULT(STDMETHODCALLTYPE *Read)(INDEndpoint *This, ND_RESULT *pResult, const ND_SGE *pSgl, SIZE_T nSge, const ND_MW_DESCRIPTOR *pRemoteMwDescriptor, ULONGLONG Offset, DWORD Flags);
	HRESULT(STDMETHODCALLTYPE *Write)(INDEndpoint *This, ND_RESULT *pResult, const ND_SGE *pSgl, SIZE_T nSge, const ND_MW_DESCRIPTOR *pRemoteMwDescriptor, ULONGLONG Offset, DWORD Flags);
} INDEndpointVtbl;

NDABI_INTERFACE(INDConnector)
typedef struct INDConnectorVtbl {
	NDABI_OVERLAPPED1(INDConnector)
	HRESULT(STDMETHODCALLTYPE *CreateEndpoint)(INDConnector *This, INDCompletionQueue *pInboundCq, INDCompletionQueue *pOutboundCq, SIZE_T nInboundEntries, SIZE_T nOutboundEntries, SIZE_T nInboundSge, SIZE_T nOutboundSge, SIZE_T InboundReadLimit, SIZE_T OutboundReadLimit, SIZE_T *pMaxInlineData, INDEndpoint **ppEndpoint);
	HRESULT(STDMETHODCALLTYPE *Connect)(INDConnector *This, INDEndpoint *pEndpoint, const struct sockaddr *pAddress, SIZE_T AddressLength, INT Protocol, USHORT LocalPort, const void *pPrivateData, SIZE_T PrivateDataLength, OVERLAPPED *pOverlapped);
	HRESULT(STDMETHODCALLTYPE *CompleteConnect)(INDConnector *This, OVERLAPPED *pOverlapped);
	HRESULT(STDMETHODCALLTYPE *Accept)(INDConnector *This, INDEndpoint *pEndpoint, const void *pPrivateData, SIZE_T PrivateDataLength, OVERLAPPED *pOverlapped);
	HRESULT(STDMETHODCALLTYPE *Reject)(INDConnector *This, const void *pPrivateData, SIZE_T PrivateDataLength);
	HRESULT(STDMETHODCALLTYPE *GetConnectionData)(INDConnector *This, SIZE_T *pInboundReadLimit, SIZE_T *pOutboundReadLimit, void *pPrivateData, SIZE_T *pPrivateDataLength);
	HRESULT(STDMETHODCALLTYPE *GetLocalAddress)(INDConnector *This, struct sockaddr *pAddress, SIZE_T *pAddressLength);
	HRESULT(STDMETHODCALLTYPE *GetPeerAddress)(INDConnector *This, struct sockaddr *pAddress, SIZE_T *pAddressLength);
	HRESULT(STDMETHODCALLTYPE *NotifyDisconnect)(INDConnector *This, OVERLAPPED *pOverlapped);
	HRESULT(STDMETHODCALLTYPE *Disconnect)(INDConnector *This, OVERLAPPED *pOverlapped);
} INDConnectorVtbl;

NDABI_INTERFACE(INDListen)
typedef struct INDListenVtbl {
	NDABI_OVERLAPPED1(INDListen)
	HRESULT(STDMETHODCALLTYPE *GetConnectionRequest)(INDListen *This, INDConnector *pConnector, OVERLAPPED *pOverlapped);
} INDListenVtbl;

NDABI_INTERFACE(INDAdapter)
typedef struct INDAdapterVtbl {
	NDABI_OVERLAPPED1(INDAdapter)
	HANDLE(STDMETHODCALLTYPE *GetFileHandle)(INDAdapter *This);
	HRESULT(STDMETHODCALLTYPE *Query)(INDAdapter *This, DWORD VersionRequested, ND_ADAPTER_INFO1 *pInfo, SIZE_T *pBufferSize);
	HRESULT(STDMETHODCALLTYPE *Control)(INDAdapter *This, DWORD IoControlCode, const void *pInBuffer, SIZE_T InBufferSize, void *pOutBuffer, SIZE_T OutBufferSize, SIZE_T *pBytesReturned, OVERLAPPED *pOverlapped);
	HRESULT(STDMETHODCALLTYPE *CreateCompletionQueue)(INDAdapter *This, SIZE_T nEntries, INDCompletionQueue **ppCq);
	HRESULT(STDMETHODCALLTYPE *RegisterMemory)(INDAdapter *This, const void *pBuffer, SIZE_T BufferSize, OVERLAPPED *pOverlapped, ND_MR_HANDLE *phMr);
	HRESULT(STDMETHODCALLTYPE *DeregisterMemory)(INDAdapter *This, ND_MR_HANDLE hMr, OVERLAPPED *pOverlapped);
	HRESULT(STDMETHODCALLTYPE *CreateMemoryWindow)(INDAdapter *This, ND_RESULT *pInvalidateResult, INDMemoryWindow **ppMw);
	HRESULT(STDMETHODCALLTYPE *CreateConnector)(INDAdapter *This, INDConnector **ppConnector);
	HRESULT(STDMETHODCALLTYPE *Listen)(INDAdapter *This, SIZE_T Backlog, INT Protocol, USHORT Port, USHORT *pAssignedPort, INDListen **ppListen);
} INDAdapterVtbl;

NDABI_INTERFACE(INDProvider)
typedef struct INDProviderVtbl {
	NDABI_IUNKNOWN(INDProvider)
	HRESULT(STDMETHODCALLTYPE *QueryAddressList)(INDProvider *This, SOCKET_ADDRESS_LIST *pAddressList, SIZE_T *pBufferSize);
	HRESULT(STDMETHODCALLTYPE *OpenAdapter)(INDProvider *This, const struct sockaddr *pAddress, SIZE_T AddressLength, INDAdapter **ppAdapter);
} INDProviderVtbl;

/* What a provider DLL exports. */
typedef HRESULT(STDMETHODCALLTYPE *NDABI_DLLGETCLASSOBJECT)(REFCLSID rclsid, REFIID riid, LPVOID *ppv);
typedef HRESULT(STDMETHODCALLTYPE *NDABI_DLLCANUNLOADNOW)(void);

#endif
