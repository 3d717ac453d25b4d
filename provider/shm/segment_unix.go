//go:build darwin || freebsd || (linux && shmportable)

package shm

import (
	"os"

	"golang.org/x/sys/unix"
)

// sharedFile creates a file of size bytes that nothing names: created in
// the system's temporary directory with a random name and mode 0600, and
// unlinked at once. Mapped MAP_SHARED, its pages are what two processes
// that hold it share. (macOS and FreeBSD have no memfd with seals that
// golang.org/x/sys reaches, nor shm_open there: see fixedSizeFile for
// what that leaves to the peer.)
func sharedFile(prefix string, size int) (int, error) {
	f, err := os.CreateTemp("", prefix+"-*")
	if err != nil {
		return -1, err
	}
	os.Remove(f.Name())
	rc, err := f.SyscallConn()
	fd := -1
	if err == nil {
		rc.Control(func(x uintptr) { fd, err = unix.FcntlInt(x, unix.F_DUPFD_CLOEXEC, 0) })
	}
	f.Close()
	if err != nil {
		return -1, os.NewSyscallError("fcntl(F_DUPFD_CLOEXEC)", err)
	}
	if err := unix.Ftruncate(fd, int64(size)); err != nil {
		unix.Close(fd)
		return -1, os.NewSyscallError("ftruncate", err)
	}
	return fd, nil
}

// fixedSizeFile reports whether the peer's fd is a regular file of exactly
// size bytes. Unlike Linux's sealed memfds, nothing stops the peer from
// shrinking it afterwards, which would make this process's accesses to the
// lost pages fault (SIGBUS, which the Go runtime turns into a crash). The
// peer is a process of the same user (setup_unix.go), which could harm
// this one in other ways too; docs/shm-transport.md says so.
func fixedSizeFile(fd int, size uint64) bool {
	var st unix.Stat_t
	return unix.Fstat(fd, &st) == nil && st.Mode&unix.S_IFMT == unix.S_IFREG && st.Size >= 0 && uint64(st.Size) == size
}
