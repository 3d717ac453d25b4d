//go:build darwin || freebsd || (linux && shmportable)

package shm

import (
	"os"

	"golang.org/x/sys/unix"

	"github.com/godirect/nd/internal/shmring"
)

// segment is a connection's shared memory (see segment.go), mapped from
// an unlinked file that is closed once mapped and passed.
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

// sharedFile creates a file of size bytes that nothing names: created in
// the system's temporary directory with a random name and mode 0600, and
// unlinked at once. Mapped MAP_SHARED, its pages are what two processes
// that hold it share. (macOS and FreeBSD have no memfd with seals that
// golang.org/x/sys reaches, nor shm_open there: see segpass_unix.go for
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
// is a regular file of the expected size.
func mapSegment(fd, ringSize int) (*segment, error) {
	if !shmring.ValidDataSize(ringSize) || ringSize > 256<<20 {
		return nil, errSegment
	}
	size := segmentSize(ringSize)
	if !regularOfSize(fd, uint64(size)) {
		return nil, errSegment
	}
	mem, err := unix.Mmap(fd, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return nil, os.NewSyscallError("mmap", err)
	}
	return &segment{mem: mem, ringSize: ringSize}, nil
}

// regularOfSize reports whether fd is a regular file of exactly size bytes.
func regularOfSize(fd int, size uint64) bool {
	var st unix.Stat_t
	return unix.Fstat(fd, &st) == nil && st.Mode&unix.S_IFMT == unix.S_IFREG && st.Size >= 0 && uint64(st.Size) == size
}
