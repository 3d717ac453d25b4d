package ndexport

import (
	"net/netip"
	"testing"
	"time"
	"unsafe"

	"github.com/godirect/nd"
	"github.com/godirect/nd/internal/ndabi"
	"github.com/godirect/nd/provider/loop"
	"github.com/godirect/nd/provider/shm"
	"github.com/godirect/nd/provider/tcp"
)

var localhost = netip.MustParseAddr("127.0.0.1")

// transports are the providers the tests run the objects over: loop (in
// memory), tcp over loopback and shm.
func transports(t *testing.T) []*Transport {
	t.Helper()
	shmCfg := shm.DefaultConfig()
	shmCfg.Namespace = "godirect-ndexport-test"
	tcpCfg := tcp.DefaultConfig()
	tcpCfg.Addresses = []netip.Addr{localhost}
	return []*Transport{
		{Name: "loop", Provider: loop.New()},
		{Name: "tcp", Provider: tcp.New(tcpCfg)},
		{Name: "shm", Provider: shm.New(shmCfg)},
	}
}

// sockaddr is ap as the consumer passes it.
func sockaddr(ap netip.AddrPort) []byte {
	b := make([]byte, ndabi.SockaddrSize(ap))
	ndabi.PutSockaddr(b, ap)
	return b
}

func ptr(b []byte) unsafe.Pointer {
	if len(b) == 0 {
		return nil
	}
	return unsafe.Pointer(&b[0])
}

// want fails the test unless st is w.
func want(t *testing.T, what string, st, w nd.Status) {
	t.Helper()
	if st != w {
		t.Fatalf("%s = %v, want %v", what, st, w)
	}
}

// finish waits for b's request ov (GetOverlappedResult with wait) and
// checks its status.
func finish(t *testing.T, what string, b *Base, ov *ndabi.Overlapped, w nd.Status) {
	t.Helper()
	want(t, what, b.GetOverlappedResult(ov, true), w)
}

// packet takes the next packet of f, waiting for it, and checks it is ov's
// with the status of st's class.
func packet(t *testing.T, f File, ov *ndabi.Overlapped, st nd.Status) {
	t.Helper()
	mf := f.(*MemoryFile)
	done := make(chan Packet, 1)
	go func() {
		p, _ := mf.Dequeue(true)
		done <- p
	}()
	select {
	case p := <-done:
		if p.Overlapped != ov {
			t.Fatalf("packet for %p, want %p", p.Overlapped, ov)
		}
		wantStatus := uintptr(0)
		if !succeeded(st) {
			wantStatus = statusCancelled
		}
		if p.Status != wantStatus {
			t.Fatalf("packet status %#x, want %#x (for %v)", p.Status, wantStatus, st)
		}
	case <-time.After(20 * time.Second):
		mf.Close(false)
		t.Fatalf("no packet for %p", ov)
	}
}

// noPacket checks that f holds no packet now.
func noPacket(t *testing.T, f File) {
	t.Helper()
	if p, ok := f.(*MemoryFile).Dequeue(false); ok {
		t.Fatalf("unexpected packet for %p (status %#x)", p.Overlapped, p.Status)
	}
}

// waitLive waits until Live() is at most n (objects finalize as their
// pending requests end).
func waitLive(t *testing.T, n int64) {
	t.Helper()
	timeout := make(chan struct{})
	timer := time.AfterFunc(20*time.Second, func() { close(timeout) })
	defer timer.Stop()
	if !WaitLive(n, timeout) {
		t.Fatalf("Live() = %d, want %d", Live(), n)
	}
}
