//go:build linux || darwin || freebsd

package shm

import (
	"os"

	"golang.org/x/sys/unix"
)

// allocationOf returns the allocation that holds all of buf: its id, size
// and buf's offset in it, and with dup a duplicate of its descriptor (the
// caller closes it); ok is false if buf is not in one (or the dup failed).
func allocationOf(buf []byte, dup bool) (id uint32, size int, off uint64, fd int, ok bool) {
	allocs.mu.Lock()
	defer allocs.mu.Unlock()
	a, off := allocationLocked(buf)
	if a == nil {
		return 0, 0, 0, -1, false
	}
	fd = -1
	if dup {
		var err error
		if fd, err = unix.FcntlInt(uintptr(a.fd), unix.F_DUPFD_CLOEXEC, 0); err != nil {
			return 0, 0, 0, -1, false
		}
	}
	return a.id, len(a.mem), off, fd, true
}

// newAllocationMemory makes and maps the shared file of an allocation of n
// bytes, and returns its mapping and descriptor.
func newAllocationMemory(n int) ([]byte, osHandle, error) {
	fd, err := sharedFile("godirect-nd-shm-mem", n)
	if err != nil {
		return nil, -1, err
	}
	mem, err := unix.Mmap(fd, 0, n, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		unix.Close(fd)
		return nil, -1, os.NewSyscallError("mmap", err)
	}
	return mem, fd, nil
}

// release unmaps the allocation and closes its descriptor.
func (a *allocation) release() {
	unix.Munmap(a.mem)
	unix.Close(a.fd)
}
