package shm

import (
	"context"
	"net/netip"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/windows"

	"github.com/godirect/nd/internal/winipc"
)

// The hostile-peer tests' platform pieces on Windows.

// fakeConnect connects a fake active side to the listener on port of
// local's address.
func fakeConnect(t *testing.T, tr *transport, local netip.AddrPort, port uint16) *setupConn {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	pc, err := winipc.Dial(ctx, tr.listenName(local.Addr(), 0, port))
	if err != nil {
		t.Fatal(err)
	}
	c, err := newSetupConn(pc)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.release)
	return c
}

// fakeRequestBody is the request message as the active side at local
// sends it: its address and port follow the request.
func fakeRequestBody(req *request, local netip.AddrPort) []byte {
	return appendActive(req.append(nil), local)
}

// releaseSegmentHandle leaves the section's handle to the segment, which
// keeps it for the peer to take.
func releaseSegmentHandle(osHandle) {}

// badSegment is an event where a section is announced; it stays open
// until the peer has taken it (release).
func badSegment(t *testing.T) (osHandle, func()) {
	h, err := windows.CreateEvent(nil, 0, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	return h, func() { windows.CloseHandle(h) }
}

// mapPrivate allocates size bytes of private memory (VirtualAlloc), and
// returns the call that releases it (VirtualFree). The slice is made from
// the address VirtualAlloc returned, memory the garbage collector neither
// moves nor frees; the test stops using it before the release.
func mapPrivate(t *testing.T, size int) ([]byte, func() error) {
	addr, err := windows.VirtualAlloc(0, uintptr(size), windows.MEM_COMMIT|windows.MEM_RESERVE, windows.PAGE_READWRITE)
	if err != nil {
		t.Fatal(err)
	}
	mem := unsafe.Slice((*byte)(unsafe.Add(unsafe.Pointer(nil), addr)), size)
	return mem, func() error { return windows.VirtualFree(addr, 0, windows.MEM_RELEASE) }
}

// selfPeer is this process as a peer.
func selfPeer(t *testing.T) peerProc {
	p, err := winipc.OpenProcess(windows.GetCurrentProcessId())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

// hostileEnd bounds how long TestHostilePeer scribbles before the
// connection must have ended: longer than Linux's, since under Wine each
// round's doorbells and timers go through the wineserver and the rounds
// turn slower (its seed 1 took 7 s with the 2-core host idle and over 10 s
// with a load average of 12).
const hostileEnd = time.Minute
