//go:build linux || windows || darwin || freebsd

package shm

import "unsafe"

// This file, iovec_linux.go, futex_linux.go and readyset_linux.go are the
// package's uses of unsafe on Linux. Buffers are named to the peer by their
// virtual addresses (for process_vm_readv/writev), and the shared segment is
// mapped into memory. It is sound because:
//   - addresses sent to the peer are never turned back into pointers in this
//     process; the peer uses them only through the kernel, which checks them
//     against this process's mappings;
//   - the buffers they name are registered memory or a work request's
//     inline copy, kept alive by the engine (Region, WorkRequest) while the
//     request that names them is outstanding, and Go does not move heap
//     objects;
//   - the iovecs given to process_vm_* point at slices this process owns for
//     the duration of the call.

// addrOf returns the address of b's first byte, or 0 for an empty slice.
func addrOf(b []byte) uint64 {
	if len(b) == 0 {
		return 0
	}
	return uint64(uintptr(unsafe.Pointer(unsafe.SliceData(b))))
}
