//go:build linux || darwin || freebsd

package shm

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// AllocateMemory returns size bytes inside a shared-memory segment of their
// own (a file that nothing names, mapped MAP_SHARED: a sealed memfd on
// Linux, an unlinked temporary file on macOS and FreeBSD), zeroed, for the
// application to register. When a memory window over such memory is bound
// on a shared-memory connection, the file is passed to the peer once, and
// the peer's Reads and Writes into the window become a plain copy()
// between its buffers and its own mapping of the segment: one copy, no
// system call, no goroutine of this process involved, and on Linux no need
// for the kernel to let the peer use process_vm_readv / process_vm_writev
// on this process. On macOS and FreeBSD this is the only one-sided path
// (copies into other memory go through the rings).
//
// The memory is not Go heap memory: it does not move and the garbage
// collector does not free it. Release it with FreeMemory once no
// registration covers it any more. The peer can read and write the whole
// segment (not only the bound window) once a window over it was bound on a
// connection to that peer: allocate separate memory for data the peer must
// not see.
func AllocateMemory(size int) ([]byte, error) {
	if size <= 0 || size > Info.MaxRegistrationSize {
		return nil, errors.New("shm: AllocateMemory: bad size")
	}
	page := os.Getpagesize()
	n := (size + page - 1) / page * page
	fd, err := sharedFile("godirect-nd-shm-mem", n)
	if err != nil {
		return nil, err
	}
	mem, err := unix.Mmap(fd, 0, n, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		unix.Close(fd)
		return nil, os.NewSyscallError("mmap", err)
	}
	allocs.mu.Lock()
	allocs.next++
	a := &allocation{mem: mem, fd: fd, id: allocs.next}
	allocs.list = append(allocs.list, a)
	allocs.mu.Unlock()
	return mem[:size:size], nil
}

// FreeMemory releases memory AllocateMemory returned (b must be that very
// slice, or start where it starts). It fails if b is not such memory, or
// if a peer may still copy into it: a window over it whose unbinding timed
// out (the connection ended with ND_IO_TIMEOUT) keeps it allocated for the
// life of the process.
func FreeMemory(b []byte) error {
	if len(b) == 0 {
		return errors.New("shm: FreeMemory: not memory from AllocateMemory")
	}
	start := addrOf(b)
	allocs.mu.Lock()
	for i, a := range allocs.list {
		if addrOf(a.mem) != start {
			continue
		}
		if a.pinned {
			allocs.mu.Unlock()
			return errors.New("shm: FreeMemory: a peer may still access this memory")
		}
		allocs.list = append(allocs.list[:i], allocs.list[i+1:]...)
		allocs.mu.Unlock()
		unix.Munmap(a.mem)
		unix.Close(a.fd)
		return nil
	}
	allocs.mu.Unlock()
	return errors.New("shm: FreeMemory: not memory from AllocateMemory")
}

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
