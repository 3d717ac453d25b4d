//go:build linux && !shmportable

package shm

import (
	"os"

	"golang.org/x/sys/unix"
)

// sharedFile returns a memfd of size bytes (name is its name for
// /proc/PID/fd), sealed so that nobody can shrink or grow it: a peer that
// shrank a file under our mapping would turn our accesses into SIGBUS.
func sharedFile(name string, size int) (int, error) {
	fd, err := unix.MemfdCreate(name, unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING)
	if err != nil {
		return -1, os.NewSyscallError("memfd_create", err)
	}
	if err := unix.Ftruncate(fd, int64(size)); err != nil {
		unix.Close(fd)
		return -1, os.NewSyscallError("ftruncate", err)
	}
	if _, err := unix.FcntlInt(uintptr(fd), unix.F_ADD_SEALS, unix.F_SEAL_SHRINK|unix.F_SEAL_GROW|unix.F_SEAL_SEAL); err != nil {
		unix.Close(fd)
		return -1, os.NewSyscallError("fcntl(F_ADD_SEALS)", err)
	}
	return fd, nil
}

// fixedSizeFile reports whether the peer's fd is a regular file (a memfd)
// of exactly size bytes that can no longer shrink.
func fixedSizeFile(fd int, size uint64) bool {
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFREG || st.Size < 0 || uint64(st.Size) != size {
		return false
	}
	seals, err := unix.FcntlInt(uintptr(fd), unix.F_GET_SEALS, 0)
	return err == nil && seals&unix.F_SEAL_SHRINK != 0 && seals&unix.F_SEAL_SEAL != 0
}
