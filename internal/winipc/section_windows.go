package winipc

import (
	"errors"
	"os"

	"golang.org/x/sys/windows"
)

// Section is a pagefile-backed section (a file mapping of no file) mapped
// into this process. Its size never changes: Windows does not extend
// sections that are backed by the paging file.
type Section struct {
	h    windows.Handle
	view uintptr
	mem  []byte
}

// ErrNotSection: a handle the peer named is not a section of the agreed
// size.
var ErrNotSection = errors.New("winipc: the peer's handle is not a section of the agreed size")

// NewSection creates a section of size bytes, zeroed, and maps it.
func NewSection(size int) (*Section, error) {
	if size <= 0 {
		return nil, errors.New("winipc: section size must be positive")
	}
	h, err := windows.CreateFileMapping(windows.InvalidHandle, nil, windows.PAGE_READWRITE,
		uint32(uint64(size)>>32), uint32(size), nil)
	if err != nil {
		return nil, os.NewSyscallError("CreateFileMapping", err)
	}
	s, err := mapSection(h, size)
	if err != nil {
		windows.CloseHandle(h)
		return nil, err
	}
	return s, nil
}

// mapSection maps size bytes of the section h, which the Section owns
// from then on when it succeeds.
func mapSection(h windows.Handle, size int) (*Section, error) {
	view, err := windows.MapViewOfFile(h, windows.FILE_MAP_READ|windows.FILE_MAP_WRITE, 0, 0, uintptr(size))
	if err != nil {
		return nil, os.NewSyscallError("MapViewOfFile", err)
	}
	return &Section{h: h, view: view, mem: viewBytes(view, size)}, nil
}

// SectionFrom maps the section that handle value v names in the peer
// process, which must be size bytes at least: MapViewOfFile of size bytes
// fails on a smaller section, and on a handle of another kind.
func SectionFrom(p *Process, v uint64, size int) (*Section, error) {
	h, err := p.TakeHandle(v)
	if err != nil {
		return nil, err
	}
	if size <= 0 {
		windows.CloseHandle(h)
		return nil, ErrNotSection
	}
	s, err := mapSection(h, size)
	if err != nil {
		windows.CloseHandle(h)
		return nil, ErrNotSection
	}
	return s, nil
}

// MapSection maps size bytes of the section h, a handle already taken
// from a peer (Process.TakeHandle), which the Section owns from then on;
// it fails with ErrNotSection, and closes h, when h is not a section of at
// least size bytes.
func MapSection(h windows.Handle, size int) (*Section, error) {
	if size <= 0 {
		windows.CloseHandle(h)
		return nil, ErrNotSection
	}
	s, err := mapSection(h, size)
	if err != nil {
		windows.CloseHandle(h)
		return nil, ErrNotSection
	}
	return s, nil
}

// Bytes returns the mapped memory; it is valid until Unmap.
func (s *Section) Bytes() []byte { return s.mem }

// Handle returns the section's handle in this process (to name it to a
// peer, which takes it with TakeHandle). It stays owned by s.
func (s *Section) Handle() windows.Handle { return s.h }

// CloseHandle closes the section's handle once every peer that needed it
// has taken it; the mapping stays.
func (s *Section) CloseHandle() {
	if s.h != 0 {
		windows.CloseHandle(s.h)
		s.h = 0
	}
}

// Unmap unmaps the view and closes the handle. Nothing may use Bytes after.
func (s *Section) Unmap() {
	if s.view != 0 {
		windows.UnmapViewOfFile(s.view)
		s.view, s.mem = 0, nil
	}
	s.CloseHandle()
}
