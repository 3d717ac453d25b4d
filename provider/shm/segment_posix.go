//go:build linux || darwin || freebsd

package shm

import (
	"os"

	"github.com/godirect/nd/internal/shmring"
	"golang.org/x/sys/unix"
)

// segment is a connection's shared memory (see segment.go), mapped from a
// descriptor (Linux: a sealed memfd; macOS, FreeBSD: an unlinked file) that
// is closed once mapped and passed.
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

// newSegment creates the segment's file and maps it. It returns the
// mapping and the file's descriptor (to pass to the peer).
func newSegment(ringSize int) (*segment, int, error) {
	fd, err := sharedFile("godirect-nd-shm", segmentSize(ringSize))
	if err != nil {
		return nil, -1, err
	}
	s, err := mapSegment(fd, ringSize)
	if err != nil {
		unix.Close(fd)
		return nil, -1, err
	}
	return s, fd, nil
}

// mapSegment maps a segment received from the peer after checking that it
// is a file of the expected size that cannot shrink where the system can
// seal (fixedSizeFile).
func mapSegment(fd, ringSize int) (*segment, error) {
	if !shmring.ValidDataSize(ringSize) || ringSize > 256<<20 {
		return nil, errSegment
	}
	size := segmentSize(ringSize)
	if !fixedSizeFile(fd, uint64(size)) {
		return nil, errSegment
	}
	mem, err := unix.Mmap(fd, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return nil, os.NewSyscallError("mmap", err)
	}
	return &segment{mem: mem, ringSize: ringSize}, nil
}
