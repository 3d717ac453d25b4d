//go:build linux && !shmportable

package shm

import (
	"os"

	"golang.org/x/sys/unix"

	"github.com/godirect/nd/internal/shmring"
)

// segment is a connection's shared memory (see segment.go), mapped from a
// memfd that is closed once mapped and passed.
type segment struct {
	mem      []byte
	ringSize int
}

func (s *segment) unmap() {
	if s.mem != nil {
		unix.Munmap(s.mem)
		s.mem = nil
	}
}

// newSegment creates a memfd of the segment's size, seals its size, and
// maps it. It returns the mapping and the memfd (to pass to the peer).
func newSegment(ringSize int) (*segment, int, error) {
	fd, err := unix.MemfdCreate("godirect-nd-shm", unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING)
	if err != nil {
		return nil, -1, os.NewSyscallError("memfd_create", err)
	}
	size := segmentSize(ringSize)
	if err := unix.Ftruncate(fd, int64(size)); err != nil {
		unix.Close(fd)
		return nil, -1, os.NewSyscallError("ftruncate", err)
	}
	// The peer must not shrink the file under our mapping (that would turn
	// our accesses into SIGBUS).
	if _, err := unix.FcntlInt(uintptr(fd), unix.F_ADD_SEALS, unix.F_SEAL_SHRINK|unix.F_SEAL_GROW|unix.F_SEAL_SEAL); err != nil {
		unix.Close(fd)
		return nil, -1, os.NewSyscallError("fcntl(F_ADD_SEALS)", err)
	}
	s, err := mapSegment(fd, ringSize)
	if err != nil {
		unix.Close(fd)
		return nil, -1, err
	}
	return s, fd, nil
}

// mapSegment maps a segment received from the peer after checking that it
// is a memfd of the expected size that can no longer shrink.
func mapSegment(fd, ringSize int) (*segment, error) {
	if !shmring.ValidDataSize(ringSize) || ringSize > 256<<20 {
		return nil, errSegment
	}
	size := segmentSize(ringSize)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil || st.Size != int64(size) {
		return nil, errSegment
	}
	seals, err := unix.FcntlInt(uintptr(fd), unix.F_GET_SEALS, 0)
	if err != nil || seals&unix.F_SEAL_SHRINK == 0 || seals&unix.F_SEAL_SEAL == 0 {
		return nil, errSegment
	}
	mem, err := unix.Mmap(fd, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return nil, os.NewSyscallError("mmap", err)
	}
	return &segment{mem: mem, ringSize: ringSize}, nil
}
