//go:build linux || windows || darwin || freebsd

package shm

import (
	"errors"
	"os"

	"github.com/godirect/nd/internal/shmring"
)

// A segment (segment_linux.go, segment_windows.go) is a connection's
// shared memory: the active-to-passive ring followed by the
// passive-to-active ring, each shmring.Size(ringSize) bytes, then the
// window table the active side publishes and the one the passive side
// publishes (tableSize bytes each, see wtable.go), in one sealed memfd (a
// pagefile-backed section on Windows).

// segmentSize returns the bytes of a segment with rings of ringSize.
func segmentSize(ringSize int) int {
	n := 2*shmring.Size(ringSize) + 2*tableSize
	page := os.Getpagesize()
	return (n + page - 1) / page * page
}

// ring returns the ring memory for direction dir (0: active to passive).
func (s *segment) ring(dir int) []byte {
	n := shmring.Size(s.ringSize)
	return s.mem[dir*n : (dir+1)*n : (dir+1)*n]
}

// table returns the window table written by the active side (dir 0) or
// the passive side (dir 1).
func (s *segment) table(dir int) []byte {
	off := 2*shmring.Size(s.ringSize) + dir*tableSize
	return s.mem[off : off+tableSize : off+tableSize]
}

var errSegment = errors.New("shm: the peer's segment is not a sealed memfd of the agreed size")
