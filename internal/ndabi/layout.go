package ndabi

import "unsafe"

// The structures that cross the interface, field for field as ndspi.h and
// nddef.h lay them out on 64-bit Windows. Fields that hold the consumer's
// pointers are unsafe.Pointer; fields that hold values the consumer treats
// as opaque (request and queue pair contexts, memory handles, event
// handles) are uintptr, since they need not point anywhere.

// Result is ND v1's ND_RESULT (16 bytes). package nd's Result has the same
// layout (the tests check it), so a consumer's ND_RESULT can be handed to
// the engine as an *nd.Result.
type Result struct {
	Status           uint32
	_                uint32
	BytesTransferred uintptr
}

// SGE is ND v1's ND_SGE (24 bytes): a buffer and the memory handle it is
// registered under (MR 0: inline data).
type SGE struct {
	Addr   unsafe.Pointer `c:"pAddr"`
	Length uintptr
	MR     uintptr `c:"hMr"`
}

// MWDescriptorSize is the size of ND v1's ND_MW_DESCRIPTOR, which is packed
// and big-endian (nd.MWDescriptor marshals it).
const MWDescriptorSize = 20

// AdapterInfo1 is ND v1's ND_ADAPTER_INFO1 (128 bytes).
type AdapterInfo1 struct {
	VendorID              uint32 `c:"VendorId"`
	DeviceID              uint32 `c:"DeviceId"`
	MaxInboundSge         uintptr
	MaxInboundRequests    uintptr
	MaxInboundLength      uintptr
	MaxOutboundSge        uintptr
	MaxOutboundRequests   uintptr
	MaxOutboundLength     uintptr
	MaxInlineData         uintptr
	MaxInboundReadLimit   uintptr
	MaxOutboundReadLimit  uintptr
	MaxCqEntries          uintptr
	MaxRegistrationSize   uintptr
	MaxWindowSize         uintptr
	LargeRequestThreshold uintptr
	MaxCallerData         uintptr
	MaxCalleeData         uintptr
}

// AdapterInfo2 is ND v2's ND2_ADAPTER_INFO (96 bytes).
type AdapterInfo2 struct {
	InfoVersion                uint32
	VendorID                   uint16 `c:"VendorId"`
	DeviceID                   uint16 `c:"DeviceId"`
	AdapterID                  uint64 `c:"AdapterId"`
	MaxRegistrationSize        uintptr
	MaxWindowSize              uintptr
	MaxInitiatorSge            uint32
	MaxReceiveSge              uint32
	MaxReadSge                 uint32
	MaxTransferLength          uint32
	MaxInlineDataSize          uint32
	MaxInboundReadLimit        uint32
	MaxOutboundReadLimit       uint32
	MaxReceiveQueueDepth       uint32
	MaxInitiatorQueueDepth     uint32
	MaxSharedReceiveQueueDepth uint32
	MaxCompletionQueueDepth    uint32
	InlineRequestThreshold     uint32
	LargeRequestThreshold      uint32
	MaxCallerData              uint32
	MaxCalleeData              uint32
	AdapterFlags               uint32
}

// Result2 is ND v2's ND2_RESULT (32 bytes).
type Result2 struct {
	Status           uint32
	BytesTransferred uint32
	QueuePairContext uintptr
	RequestContext   uintptr
	RequestType      uint32
	_                uint32
}

// SGE2 is ND v2's ND2_SGE (16 bytes).
type SGE2 struct {
	Buffer            unsafe.Pointer
	BufferLength      uint32
	MemoryRegionToken uint32
}

// Overlapped is Windows' OVERLAPPED (32 bytes). Internal holds the I/O's
// NTSTATUS (STATUS_PENDING while it is pending); Event is the event handle,
// whose lowest bit set asks that the completion not be queued to a
// completion port.
type Overlapped struct {
	Internal     uintptr
	InternalHigh uintptr
	Offset       uint32
	OffsetHigh   uint32
	Event        uintptr `c:"hEvent"`
}

// SocketAddress is Winsock's SOCKET_ADDRESS (16 bytes).
type SocketAddress struct {
	Sockaddr unsafe.Pointer `c:"lpSockaddr"`
	Length   int32          `c:"iSockaddrLength"`
	_        int32
}

// SocketAddressListHeader is the fixed part of Winsock's
// SOCKET_ADDRESS_LIST: the count, then (at offset 8) the array of
// SocketAddress.
type SocketAddressListHeader struct {
	Count int32 `c:"iAddressCount"`
	_     int32
}

// The sizes of the sockaddr structures ND takes.
const (
	SizeofSockaddrIn  = 16 // sockaddr_in
	SizeofSockaddrIn6 = 28 // sockaddr_in6
)

// The sizes of the structures, for the size protocols of Query and
// QueryAddressList.
const (
	SizeofResult        = int(unsafe.Sizeof(Result{}))
	SizeofSGE           = int(unsafe.Sizeof(SGE{}))
	SizeofAdapterInfo1  = int(unsafe.Sizeof(AdapterInfo1{}))
	SizeofAdapterInfo2  = int(unsafe.Sizeof(AdapterInfo2{}))
	SizeofResult2       = int(unsafe.Sizeof(Result2{}))
	SizeofSGE2          = int(unsafe.Sizeof(SGE2{}))
	SizeofOverlapped    = int(unsafe.Sizeof(Overlapped{}))
	SizeofSocketAddress = int(unsafe.Sizeof(SocketAddress{}))
)
