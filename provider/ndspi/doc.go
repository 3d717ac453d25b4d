// Package ndspi is an nd.Provider over the Network Direct providers
// installed on Windows: the ND v2 and ND v1 DLLs that RDMA NICs' drivers
// register in the Winsock catalog (NVIDIA's WinOF-2 and WinOF, Chelsio's),
// and godirect's own (cmd/ndprovider). It is pure Go: the providers' COM
// objects are called through their tables of methods with
// syscall.SyscallN, without cgo or a C library.
//
// The provider registers itself as "ndspi" and takes its Config from the
// environment (ConfigFromEnv: GODIRECT_NDSPI_DLL, GODIRECT_NDSPI_CLASS,
// GODIRECT_NDSPI_VERSION), so every nd tool reaches an installed provider
// with -provider ndspi. Elsewhere than 64-bit Windows (whose layouts
// internal/ndabi describes) it builds and answers nd.ErrNotSupported.
//
// # Discovery
//
// Without a DLL named, the provider reads the Winsock catalog
// (WSCEnumProtocols, WSCGetProviderPath; internal/ndcatalog): the ND
// entries grouped by provider id in catalog order, ND v2 preferred where a
// DLL registers both, the DLL's path with its environment strings
// expanded. Each DLL is loaded once (LoadLibraryExW) and never unloaded;
// ND v2's IND2Provider comes from DllGetClassObject, ND v1's INDProvider
// from the IClassFactory it returns. A DLL that fails to load, lacks the
// export or serves no such class is left out, and Installed says why. The
// provider serves the union of the providers' addresses; an adapter is
// opened on the first provider, in catalog order, that serves its address.
//
// # ND v1 and ND v2 behind one API
//
// nd follows ND v1, which maps nearly call for call. ND v2 takes a shim:
// an endpoint is a queue pair (CreateQueuePair, the adapter's whole inline
// size asked for) that its connector connects (Bind to the adapter's
// address and the local port, then Connect with the endpoint's read
// limits) or accepts with; Listen is CreateListener, Bind and Listen (ND v2
// has no protocol number: nd's protocol is checked and not carried); a
// window's descriptor is the buffer's address and length and the window's
// remote token, which ND v2's Read and Write take as address (plus the
// offset) and token; AllowRemoteAccess registers the buffer again with
// remote rights and gives that region's remote token; shared receive
// queues are IND2SharedReceiveQueue. ND v2's parameter positions are
// mapped to nd's. What ND v2 lacks is ErrNotSupported: SendAndInvalidate,
// and a shared receive queue's Flush.
//
// # Requests and completions
//
// Posting converts the scatter/gather list into memory outside the Go heap
// (copying inline bytes there), and names the request by a slot of its
// queue: ND v2's request context is the slot, its queue pair context the
// endpoint's id in the adapter's table; an ND v1 ND_RESULT of ndspi's own,
// outside the Go heap, stands for the caller's, with a word beside it that
// names the slot. GetResults turns the provider's completions back into
// the caller's *nd.Result, the very pointer posted, with Status, Cause and
// BytesTransferred written (0 bytes for a failed request; an
// ND_ACCESS_VIOLATION's Cause inferred as the engine gives it, since ND
// carries none). Every request is posted signaled: the
// successful completion of a silent request is dropped by GetResults (ND
// lets a silent success leave no trace, and the slot must be known free).
// Neither posting nor polling allocates.
//
// # Overlapped calls
//
// Each loaded provider has one I/O completion port, to which its
// adapters' overlapped files are bound, and one goroutine that takes its
// packets. A blocking nd call makes the overlapped request with an
// OVERLAPPED outside the Go heap and waits for its packet or for its
// context: a context that ends cancels the request
// (CancelOverlappedRequests on the object) and waits for its completion,
// so no OVERLAPPED is reused while the provider may write it; the status
// is GetOverlappedResult's. A Close cancels its object's requests the same
// way before releasing it.
//
// # Memory
//
// A registered buffer is pinned (runtime.Pinner) from before its
// registration until after its deregistration. A scatter/gather entry
// whose region is not a live registration of the adapter points just past
// a small registration of ndspi's own, so that the provider itself fails
// the request with ND_ACCESS_VIOLATION, in order, as nd says.
//
// # Closing
//
// ND's objects only hold their parents; nd's Close closes what was made
// from an object. The provider keeps the objects of each adapter and
// closes them as nd says (docs/semantics.md): an endpoint's requests are
// flushed into its queues, and a closing completion queue takes what the
// provider holds for it before it is released, so GetResults still
// returns it.
//
// docs/windows.md has the mapping in full, the conformance suite's results
// through godirect's DLL under Wine, and the cases that differ, with their
// reasons.
package ndspi
