package ndabi

// The COM result codes ND providers return beside ND's statuses (which are
// package nd's Status values).
const (
	S_OK                      uint32 = 0x00000000 // success
	S_FALSE                   uint32 = 0x00000001 // DllCanUnloadNow: objects are alive
	E_NOTIMPL                 uint32 = 0x80004001
	E_NOINTERFACE             uint32 = 0x80004002 // QueryInterface: the object has no such interface
	E_POINTER                 uint32 = 0x80004003 // a required pointer is NULL
	E_FAIL                    uint32 = 0x80004005
	E_OUTOFMEMORY             uint32 = 0x8007000E
	E_INVALIDARG              uint32 = 0x80070057
	CLASS_E_NOAGGREGATION     uint32 = 0x80040110 // IClassFactory::CreateInstance with an outer object
	CLASS_E_CLASSNOTAVAILABLE uint32 = 0x80040111 // DllGetClassObject: not a class of this DLL
)

// STATUS_PENDING is the NTSTATUS a pending I/O leaves in OVERLAPPED.Internal
// (ND_PENDING has the same value).
const STATUS_PENDING uintptr = 0x103

// ND versions (nddef.h): the iVersion of a Winsock catalog entry, and the
// InfoVersion of ND2_ADAPTER_INFO.
const (
	NDVersion1 = 0x1
	NDVersion2 = 0x20000
)

// ND v2 memory-region flags (ND_MR_FLAG_*). Remote write includes local
// write.
const (
	MRFlagAllowLocalWrite  uint32 = 0x00000001
	MRFlagAllowRemoteRead  uint32 = 0x00000002
	MRFlagAllowRemoteWrite uint32 = 0x00000005
	MRFlagRDMAReadSink     uint32 = 0x00000008
	MRFlagDoNotSecureVM    uint32 = 0x80000000
)

// OpFlagInline is ND v2's ND_OP_FLAG_INLINE: the request's bytes are copied
// when it is posted (v1 marks inline entries with a NULL memory handle
// instead). The other ND_OP_FLAG_* values are nd.Flags.
const OpFlagInline uint32 = 0x00000020

// ND v2 request types (ND2_REQUEST_TYPE), reported in ND2_RESULT.
const (
	RequestReceive    uint32 = 0
	RequestSend       uint32 = 1
	RequestBind       uint32 = 2
	RequestInvalidate uint32 = 3
	RequestRead       uint32 = 4
	RequestWrite      uint32 = 5
)

// Winsock catalog values of an ND provider's entry (ws2spi.h, winsock2.h).
const (
	XP1GuaranteedDelivery = 0x00000002
	XP1GuaranteedOrder    = 0x00000004
	XP1MessageOriented    = 0x00000008
	XP1ConnectData        = 0x00000080
	// NDServiceFlags is what an ND entry's dwServiceFlags1 must contain.
	NDServiceFlags = XP1GuaranteedDelivery | XP1GuaranteedOrder | XP1MessageOriented | XP1ConnectData

	PFLHidden                = 0x00000004
	PFLNetworkDirectProvider = 0x00000010
	NDProviderFlags          = PFLHidden | PFLNetworkDirectProvider
	AFInet                   = 2
	AFInet6                  = 23
)
