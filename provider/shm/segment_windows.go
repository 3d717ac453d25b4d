package shm

import (
	"github.com/godirect/nd/internal/shmring"
	"github.com/godirect/nd/internal/winipc"
)

// segment is a connection's shared memory (see segment.go), mapped from a
// section whose handle stays open while the segment is mapped (the active
// side's is what the passive side takes).
type segment struct {
	mem      []byte
	ringSize int
	sec      *winipc.Section
}

func (s *segment) unmap() {
	if s.sec != nil {
		s.sec.Unmap()
		s.sec, s.mem = nil, nil
	}
}

// newSegment creates a pagefile-backed section of the segment's size
// (its size never changes) and maps it. It returns the mapping and the
// section's handle (to name to the peer; the segment owns it).
func newSegment(ringSize int) (*segment, osHandle, error) {
	sec, err := winipc.NewSection(segmentSize(ringSize))
	if err != nil {
		return nil, 0, err
	}
	return &segment{mem: sec.Bytes(), ringSize: ringSize, sec: sec}, sec.Handle(), nil
}

// mapSegment maps the segment whose section handle h was taken from the
// peer; mapping the agreed size fails on a smaller section or a handle of
// another kind. It owns h: on failure h is closed.
func mapSegment(h osHandle, ringSize int) (*segment, error) {
	if !shmring.ValidDataSize(ringSize) || ringSize > 256<<20 {
		closeAll([]osHandle{h})
		return nil, errSegment
	}
	sec, err := winipc.MapSection(h, segmentSize(ringSize))
	if err != nil {
		return nil, errSegment
	}
	return &segment{mem: sec.Bytes(), ringSize: ringSize, sec: sec}, nil
}
