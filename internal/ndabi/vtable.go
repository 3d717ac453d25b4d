package ndabi

// A COM object is a pointer to a pointer to its table of methods; a method
// is called through its slot in that table, with the object as the first
// argument. Interfaces lists every table's methods in ndspi.h's
// declaration order; slots.go, generated from it (go generate), names each
// interface's own slots, and the tests check both against ndabi.h compiled
// by a C compiler.

//go:generate go run gen_slots.go

// IUnknown's slots, first in every table.
const (
	SlotQueryInterface = 0
	SlotAddRef         = 1
	SlotRelease        = 2
)

// The slots of INDOverlapped and IND2Overlapped, which the overlapped
// objects (adapter v1, completion queues, shared receive queue, memory
// region, connectors, listeners) derive from.
const (
	SlotCancelOverlappedRequests = 3
	SlotGetOverlappedResult      = 4
)

// IClassFactory (ND v1's entry point).
const (
	ClassFactoryCreateInstance = 3
	ClassFactoryLockServer     = 4
)

// Interface is one interface's table: its name in ndspi.h, its identifier
// and its methods' names in slot order.
type Interface struct {
	Name    string
	IID     GUID
	Methods []string
}

var (
	unknown    = []string{"QueryInterface", "AddRef", "Release"}
	overlapped = withMethods(unknown, "CancelOverlappedRequests", "GetOverlappedResult")
)

// withMethods is base's slots followed by own.
func withMethods(base []string, own ...string) []string {
	return append(base[:len(base):len(base)], own...)
}

// Interfaces lists every ND v1 and v2 interface with its methods in slot
// order.
var Interfaces = []Interface{
	{"IND2Overlapped", IIDIND2Overlapped, overlapped},
	{"IND2CompletionQueue", IIDIND2CompletionQueue, withMethods(overlapped, "GetNotifyAffinity", "Resize", "Notify", "GetResults")},
	{"IND2SharedReceiveQueue", IIDIND2SharedReceiveQueue, withMethods(overlapped, "GetNotifyAffinity", "Modify", "Notify", "Receive")},
	{"IND2MemoryWindow", IIDIND2MemoryWindow, withMethods(unknown, "GetRemoteToken")},
	{"IND2MemoryRegion", IIDIND2MemoryRegion, withMethods(overlapped, "Register", "Deregister", "GetLocalToken", "GetRemoteToken")},
	{"IND2QueuePair", IIDIND2QueuePair, withMethods(unknown, "Flush", "Send", "Receive", "Bind", "Invalidate", "Read", "Write")},
	{"IND2Connector", IIDIND2Connector, withMethods(overlapped, "Bind", "Connect", "CompleteConnect", "Accept", "Reject", "GetReadLimits", "GetPrivateData", "GetLocalAddress", "GetPeerAddress", "NotifyDisconnect", "Disconnect")},
	{"IND2Listener", IIDIND2Listener, withMethods(overlapped, "Bind", "Listen", "GetLocalAddress", "GetConnectionRequest")},
	{"IND2Adapter", IIDIND2Adapter, withMethods(unknown, "CreateOverlappedFile", "Query", "QueryAddressList", "CreateCompletionQueue", "CreateMemoryRegion", "CreateMemoryWindow", "CreateSharedReceiveQueue", "CreateQueuePair", "CreateQueuePairWithSrq", "CreateConnector", "CreateListener")},
	{"IND2Provider", IIDIND2Provider, withMethods(unknown, "QueryAddressList", "ResolveAddress", "OpenAdapter")},
	{"INDOverlapped", IIDINDOverlapped, overlapped},
	{"INDCompletionQueue", IIDINDCompletionQueue, withMethods(overlapped, "Resize", "Notify", "GetResults")},
	{"INDMemoryWindow", IIDINDMemoryWindow, unknown},
	{"INDEndpoint", IIDINDEndpoint, withMethods(unknown, "Flush", "StartRequestBatch", "SubmitRequestBatch", "Send", "SendAndInvalidate", "Receive", "Bind", "Invalidate", "Read", "Write")},
	{"INDConnector", IIDINDConnector, withMethods(overlapped, "CreateEndpoint", "Connect", "CompleteConnect", "Accept", "Reject", "GetConnectionData", "GetLocalAddress", "GetPeerAddress", "NotifyDisconnect", "Disconnect")},
	{"INDListen", IIDINDListen, withMethods(overlapped, "GetConnectionRequest")},
	{"INDAdapter", IIDINDAdapter, withMethods(overlapped, "GetFileHandle", "Query", "Control", "CreateCompletionQueue", "RegisterMemory", "DeregisterMemory", "CreateMemoryWindow", "CreateConnector", "Listen")},
	{"INDProvider", IIDINDProvider, withMethods(unknown, "QueryAddressList", "OpenAdapter")},
}
