//go:build windows

package ndexport

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/windows"

	"github.com/godirect/nd"
	"github.com/godirect/nd/internal/ndabi"
)

// loadInternal reads ov.Internal, which the kernel and the consumer may
// write while this package reads it.
func loadInternal(ov *ndabi.Overlapped) uintptr { return atomic.LoadUintptr(&ov.Internal) }

// pipeFile is an overlapped file on Windows: the server end of a named pipe
// that only this process opened. The consumer gets the server end's handle;
// the provider keeps a duplicate of it and the pipe's client end. To
// complete a consumer's request it issues a one-byte read on the duplicate
// with the consumer's OVERLAPPED, which stays pending on the empty pipe,
// and then either writes a byte to the client end (the read completes with
// STATUS_SUCCESS) or cancels the read (STATUS_CANCELLED). The kernel does
// the rest as for any I/O on the file: it writes the OVERLAPPED, sets its
// event, and queues a packet to the completion port the consumer bound the
// file to, unless the event's lowest bit says not to. One completion at a
// time goes through a file (its lock), so the byte written always
// completes the read just issued.
type pipeFile struct {
	handle windows.Handle // the consumer's
	reads  windows.Handle // the provider's duplicate of handle
	writes windows.Handle // the client end

	mu     sync.Mutex
	buf    *[1]byte // the reads' target, pinned for the file's life
	pinner runtime.Pinner
}

var pipeSeq atomic.Uint64

func newPlatformFile() (File, error) {
	name, err := windows.UTF16PtrFromString(fmt.Sprintf(`\\.\pipe\godirect-nd-%d-%d`, windows.GetCurrentProcessId(), pipeSeq.Add(1)))
	if err != nil {
		return nil, err
	}
	const pipeRejectRemoteClients = 0x8
	server, err := windows.CreateNamedPipe(name,
		windows.PIPE_ACCESS_DUPLEX|windows.FILE_FLAG_OVERLAPPED|windows.FILE_FLAG_FIRST_PIPE_INSTANCE,
		windows.PIPE_TYPE_BYTE|windows.PIPE_READMODE_BYTE|windows.PIPE_WAIT|pipeRejectRemoteClients,
		1, 64, 64, 0, nil)
	if err != nil {
		return nil, err
	}
	client, err := windows.CreateFile(name, windows.GENERIC_READ|windows.GENERIC_WRITE, 0, nil, windows.OPEN_EXISTING, 0, 0)
	if err != nil {
		windows.CloseHandle(server)
		return nil, err
	}
	self := windows.CurrentProcess()
	var dup windows.Handle
	if err := windows.DuplicateHandle(self, server, self, &dup, 0, false, windows.DUPLICATE_SAME_ACCESS); err != nil {
		windows.CloseHandle(client)
		windows.CloseHandle(server)
		return nil, err
	}
	f := &pipeFile{handle: server, reads: dup, writes: client, buf: new([1]byte)}
	f.pinner.Pin(f.buf)
	return f, nil
}

func (f *pipeFile) Handle() uintptr { return uintptr(f.handle) }

func (f *pipeFile) Complete(ov *ndabi.Overlapped, st nd.Status) {
	// The kernel writes the OVERLAPPED in the context of the thread that
	// issued the read; that thread waits for it below.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	wov := (*windows.Overlapped)(unsafe.Pointer(ov))
	f.mu.Lock()
	err := windows.ReadFile(f.reads, f.buf[:], nil, wov)
	if !errors.Is(err, windows.ERROR_IO_PENDING) {
		f.mu.Unlock()
		// The read did not start (the consumer's event handle is not
		// one, say): no packet can be had; the OVERLAPPED and its event
		// say it is done.
		status := uintptr(0)
		if !succeeded(st) {
			status = statusCancelled
		}
		atomic.StoreUintptr(&ov.Internal, status)
		if ev := windows.Handle(ov.Event &^ 1); ev != 0 {
			windows.SetEvent(ev)
		}
		return
	}
	if succeeded(st) {
		var n uint32
		one := [1]byte{1}
		windows.WriteFile(f.writes, one[:], &n, nil)
	} else {
		windows.CancelIoEx(f.reads, wov)
	}
	f.mu.Unlock()
	for loadInternal(ov) == ndabi.STATUS_PENDING {
		windows.SleepEx(0, true)
	}
}

func (f *pipeFile) Close(handle bool) {
	windows.CloseHandle(f.reads)
	windows.CloseHandle(f.writes)
	if handle {
		windows.CloseHandle(f.handle)
	}
	f.pinner.Unpin()
}

// consumeEvent takes the signal of the consumer's event, if it is set (an
// auto-reset event is reset; a manual-reset one stays as it is).
func consumeEvent(ev uintptr) { windows.WaitForSingleObject(windows.Handle(ev), 0) }
