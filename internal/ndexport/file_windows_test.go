//go:build windows

package ndexport

import (
	"testing"
	"unsafe"

	"golang.org/x/sys/windows"

	"github.com/godirect/nd"
	"github.com/godirect/nd/internal/ndabi"
)

// TestPipeFile: the Windows file completes the consumer's OVERLAPPEDs
// through the kernel: a packet on the port the consumer bound the file to,
// with the consumer's key and OVERLAPPED, STATUS_SUCCESS or
// STATUS_CANCELLED by the status's class, the event set, and no packet
// when the event's lowest bit is set; the consumer may close its handle.
func TestPipeFile(t *testing.T) {
	f, err := newPlatformFile()
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close(false)
	port, err := windows.CreateIoCompletionPort(windows.Handle(f.Handle()), 0, 0x42, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer windows.CloseHandle(port)
	windows.CloseHandle(windows.Handle(f.Handle())) // the consumer's to close
	dequeue := func(timeout uint32) (*ndabi.Overlapped, uintptr, error) {
		var n uint32
		var key uintptr
		var ov *windows.Overlapped
		err := windows.GetQueuedCompletionStatus(port, &n, &key, &ov, timeout)
		return (*ndabi.Overlapped)(unsafe.Pointer(ov)), key, err
	}
	for _, st := range []nd.Status{nd.Success, nd.Timeout, nd.ErrConnectionRefused, nd.ErrCanceled, nd.ErrBufferOverflow} {
		ev, _ := windows.CreateEvent(nil, 0, 0, nil)
		ov := &ndabi.Overlapped{Event: uintptr(ev)}
		f.Complete(ov, st)
		got, key, err := dequeue(5000)
		if got != ov || key != 0x42 {
			t.Fatalf("%v: packet %p key %#x, want %p 0x42", st, got, key, ov)
		}
		if (err == nil) != succeeded(st) {
			t.Fatalf("%v: the packet's class: %v", st, err)
		}
		if ev, _ := windows.WaitForSingleObject(ev, 0); ev != windows.WAIT_OBJECT_0 {
			t.Fatalf("%v: the event is not set", st)
		}
		windows.CloseHandle(ev)
	}
	ev, _ := windows.CreateEvent(nil, 0, 0, nil)
	defer windows.CloseHandle(ev)
	ov := &ndabi.Overlapped{Event: uintptr(ev) | 1}
	f.Complete(ov, nd.Success)
	if got, _, _ := dequeue(0); got != nil {
		t.Fatal("a packet for an event with its lowest bit set")
	}
	if s, _ := windows.WaitForSingleObject(ev, 0); s != windows.WAIT_OBJECT_0 {
		t.Fatal("the event is not set")
	}
}
