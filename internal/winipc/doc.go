// Package winipc holds the Windows primitives of the shared-memory
// transport (provider/shm): message pipes between processes of one host
// whose server and client know each other's process id from the kernel,
// pagefile-backed sections mapped by both sides, handles taken from a peer
// process with DuplicateHandle, and one-sided copies into and out of a
// peer's memory with ReadProcessMemory and WriteProcessMemory.
//
// On other systems the package is empty.
package winipc
