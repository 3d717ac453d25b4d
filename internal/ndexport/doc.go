// Package ndexport is godirect's providers seen through ndspi.h: the objects
// of ND v1 (INDProvider … INDMemoryWindow) and ND v2 (IND2Provider …
// IND2Listener) as Go types whose methods take what the COM methods take
// (the consumer's pointers, OVERLAPPEDs and sizes) and return the HRESULT
// the method returns. cmd/ndprovider gives each object its C face (a COM
// object whose table calls these methods) and exports the DLL; everything
// that decides what a call does is here, where it runs on every platform
// and is tested under the race detector.
//
// # Lifetimes
//
// Every object embeds Base: the consumer's references (AddRef, Release)
// and the references of the objects that depend on it (a queue pair holds
// its completion queues and adapter; a pending overlapped request holds its
// object). When the consumer's last reference goes, the object's pending
// overlapped requests are canceled and complete before Release returns (a
// connector also disconnects); when nothing depends on it any more it
// closes its nd object and lets go of what it held. Releasing a parent before its children is therefore legal:
// the parent lives on, unseen, until its last child is gone.
//
// # Overlapped requests
//
// A call that takes an OVERLAPPED runs its nd call on a goroutine and
// returns ND_PENDING at once; when the nd call returns, the request
// completes through the File the object was created with: the kernel
// completes an I/O with the consumer's OVERLAPPED on the file that the
// consumer got from GetFileHandle or CreateOverlappedFile, so the event is
// set and a packet reaches the completion port the consumer bound the file
// to, as for a hardware provider's I/O. The packet's status is
// STATUS_SUCCESS when the ND status is of the success class (ND_SUCCESS,
// ND_TIMEOUT) and STATUS_CANCELLED otherwise; GetOverlappedResult returns
// the exact ND status. CancelOverlappedRequests cancels the object's pending
// requests in the order they were made and returns once each one's packet
// is queued.
//
// # Memory
//
// Registered buffers, scatter/gather entries and results are the
// consumer's memory. Buffers become []byte over that memory (no copy);
// ND v1's ND_RESULT is handed to the engine as the *nd.Result it is laid
// out as, so completions are written into it directly; ND v2's results are
// kept in slots of the queue pair (Go memory) and copied into the
// consumer's ND2_RESULT array by GetResults. No Go pointer is stored in the
// consumer's memory.
package ndexport
