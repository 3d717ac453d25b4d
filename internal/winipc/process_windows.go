package winipc

import (
	"context"
	"errors"
	"os"
	"sync"

	"golang.org/x/sys/windows"
)

// Process is a handle to a peer process: to take handles from it, to
// learn when it ends, and, when Windows grants it, to read and write its
// memory. It is safe for concurrent use.
type Process struct {
	h   windows.Handle
	pid uint32
	vm  bool // PROCESS_VM_READ | VM_WRITE | VM_OPERATION granted

	closeOnce sync.Once
}

const (
	baseAccess = windows.PROCESS_DUP_HANDLE | windows.SYNCHRONIZE | windows.PROCESS_QUERY_LIMITED_INFORMATION
	vmAccess   = windows.PROCESS_VM_READ | windows.PROCESS_VM_WRITE | windows.PROCESS_VM_OPERATION
)

// OpenProcess opens the process pid, asking for the memory rights too and
// going without them if Windows refuses them.
func OpenProcess(pid uint32) (*Process, error) {
	if pid == 0 {
		return nil, errors.New("winipc: no peer process")
	}
	h, err := windows.OpenProcess(baseAccess|vmAccess, false, pid)
	if err == nil {
		return &Process{h: h, pid: pid, vm: true}, nil
	}
	h, err = windows.OpenProcess(baseAccess, false, pid)
	if err != nil {
		return nil, os.NewSyscallError("OpenProcess", err)
	}
	return &Process{h: h, pid: pid}, nil
}

// PID returns the process's id.
func (p *Process) PID() uint32 { return p.pid }

// CanAccessMemory reports whether the handle carries the rights to read
// and write the process's memory (the copies may still fail: Probe).
func (p *Process) CanAccessMemory() bool { return p.vm }

// TakeHandle duplicates the handle that value v names in the process into
// this one, with the same access. The peer names only its own handles: a
// value it makes up names nothing of ours.
func (p *Process) TakeHandle(v uint64) (windows.Handle, error) {
	if v == 0 || v != uint64(uintptr(v)) {
		return 0, errors.New("winipc: bad handle value")
	}
	var h windows.Handle
	err := windows.DuplicateHandle(p.h, windows.Handle(v), windows.CurrentProcess(), &h, 0, false, windows.DUPLICATE_SAME_ACCESS)
	if err != nil {
		return 0, os.NewSyscallError("DuplicateHandle", err)
	}
	return h, nil
}

// ErrShortCopy: a copy from or to the peer moved fewer bytes than asked.
var ErrShortCopy = errors.New("winipc: the peer's memory could not be copied in full")

// Read copies len(dst) bytes at addr in the process into dst.
func (p *Process) Read(addr uint64, dst []byte) error {
	if len(dst) == 0 {
		return nil
	}
	var n uintptr
	if err := windows.ReadProcessMemory(p.h, uintptr(addr), bytePtr(dst), uintptr(len(dst)), &n); err != nil {
		return err
	}
	if n != uintptr(len(dst)) {
		return ErrShortCopy
	}
	return nil
}

// Write copies src to addr in the process.
func (p *Process) Write(addr uint64, src []byte) error {
	if len(src) == 0 {
		return nil
	}
	var n uintptr
	if err := windows.WriteProcessMemory(p.h, uintptr(addr), bytePtr(src), uintptr(len(src)), &n); err != nil {
		return err
	}
	if n != uintptr(len(src)) {
		return ErrShortCopy
	}
	return nil
}

// Probe reads the len(want) bytes at addr in the process and reports
// whether the copy worked and found want: the peer named the bytes, so
// they prove that the handle reaches the very process the peer is.
func (p *Process) Probe(addr uint64, want []byte) error {
	if !p.vm {
		return errors.New("winipc: no memory rights on the peer process")
	}
	got := make([]byte, len(want))
	if err := p.Read(addr, got); err != nil {
		return err
	}
	if string(got) != string(want) {
		return errors.New("winipc: probe mismatch")
	}
	return nil
}

// Wait blocks until the process ends (nil) or ctx ends (its error). It
// blocks an OS thread; Close must not run while it waits.
func (p *Process) Wait(ctx context.Context) error {
	stop, err := windows.CreateEvent(nil, 1, 0, nil)
	if err != nil {
		return err
	}
	defer windows.CloseHandle(stop)
	done := make(chan struct{})
	defer close(done)
	go func() {
		select {
		case <-ctx.Done():
			windows.SetEvent(stop)
		case <-done:
		}
	}()
	w, err := windows.WaitForMultipleObjects([]windows.Handle{p.h, stop}, false, windows.INFINITE)
	if err != nil {
		return err
	}
	if w == windows.WAIT_OBJECT_0 {
		return nil
	}
	return ctx.Err()
}

// Exited reports whether the process has ended, without waiting.
func (p *Process) Exited() bool {
	w, err := windows.WaitForSingleObject(p.h, 0)
	return err == nil && w == windows.WAIT_OBJECT_0
}

// Close releases the handle.
func (p *Process) Close() error {
	var err error
	p.closeOnce.Do(func() { err = windows.CloseHandle(p.h) })
	return err
}

// AddrOf returns the address of b's first byte (0 for an empty slice), to
// name a buffer of this process to a peer that copies with Read and Write.
func AddrOf(b []byte) uint64 { return uint64(addrOf(b)) }
