//go:build darwin || freebsd || (linux && shmportable)

package shm

import (
	"bytes"
	"encoding/binary"
	"errors"
	"net"
	"net/netip"
	"os"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/godirect/nd"
	"github.com/godirect/nd/ndtest"
)

// socketPair returns the two ends of a connected stream Unix socket; a is
// non-blocking (as the runtime's sockets are) and closed by the test's
// cleanup, b a plain descriptor the test closes (as a peer that exits).
func socketPair(t *testing.T) (a, b int) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	unix.SetNonblock(fds[0], true)
	t.Cleanup(func() { unix.Close(fds[0]) })
	return fds[0], fds[1]
}

// frameOf is b as a frame.
func frameOf(b []byte) []byte {
	return append(binary.LittleEndian.AppendUint32(nil, uint32(len(b))), b...)
}

// FuzzSetupFrames writes the fuzzer's bytes into a stream socket, as a
// hostile peer could, and takes frames from the other end until it stops:
// no input panics or hangs, every frame taken is one the bytes hold, and
// only a whole frame is ever taken.
func FuzzSetupFrames(f *testing.F) {
	f.Add(frameOf([]byte{msgReady, capSend}))
	f.Add(append(frameOf([]byte{msgShort, shortFDs}), frameOf([]byte{msgAccept})...))
	f.Add([]byte{0, 0, 0, 0})
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 1})
	f.Add([]byte{3, 0, 0, 0, msgSegment})
	f.Fuzz(func(t *testing.T, in []byte) {
		if len(in) > 32<<10 {
			return
		}
		a, b := socketPair(t)
		n, err := unix.Write(b, in)
		unix.Close(b)
		if err != nil || n != len(in) {
			t.Skip("the socket took", n, "bytes:", err)
		}
		buf := make([]byte, maxMessage+maxTrailer)
		rest := in
		for {
			if typ, ok := peekMessageType(a); ok {
				if len(rest) < frameHeader+1 || typ != rest[frameHeader] {
					t.Fatalf("peekMessageType = %d with %x left", typ, rest)
				}
			}
			msg, fds, err := recvMessage(a, buf)
			if err != nil {
				if err == unix.EAGAIN {
					t.Fatalf("recvMessage waits with the peer gone and %x left", rest)
				}
				return
			}
			if len(fds) != 0 {
				t.Fatalf("descriptors %v from bytes alone", fds)
			}
			want := frameOf(msg)
			if !bytes.HasPrefix(rest, want) || len(msg) == 0 {
				t.Fatalf("recvMessage = %x, with %x left", msg, rest)
			}
			rest = rest[len(want):]
		}
	})
}

// TestFrameDescriptors: a frame's descriptors come with it and with no
// other frame, and a frame not all there yet is not taken.
func TestFrameDescriptors(t *testing.T) {
	a, b := socketPair(t)
	peerOpen := true
	defer func() {
		if peerOpen {
			unix.Close(b)
		}
	}()
	devnull, err := unix.Open("/dev/null", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(devnull)
	if err := unix.Sendmsg(b, frameOf([]byte{msgSegment, 1, 2}), unix.UnixRights(devnull), nil, 0); err != nil {
		t.Fatal(err)
	}
	second := frameOf([]byte{msgReady, 0})
	unix.Write(b, second[:3])
	buf := make([]byte, maxMessage+maxTrailer)
	msg, fds, err := recvMessage(a, buf)
	if err != nil || !bytes.Equal(msg, []byte{msgSegment, 1, 2}) || len(fds) != 1 {
		t.Fatalf("first frame: %x, %v, %v", msg, fds, err)
	}
	closeAll(fds)
	if _, _, err := recvMessage(a, buf); err != unix.EAGAIN {
		t.Fatalf("part of a frame: %v, want EAGAIN", err)
	}
	unix.Write(b, second[3:])
	msg, fds, err = recvMessage(a, buf)
	if err != nil || !bytes.Equal(msg, []byte{msgReady, 0}) || len(fds) != 0 {
		t.Fatalf("second frame: %x, %v, %v", msg, fds, err)
	}
	unix.Write(b, second[:2])
	unix.Close(b)
	peerOpen = false
	if _, _, err := recvMessage(a, buf); err != errEOF {
		t.Fatalf("part of a frame, then the peer's close: %v, want errEOF", err)
	}
}

// TestStaleListenerSocket: a listener's socket file that its process left
// behind (it died without removing it) neither keeps the port from a new
// listener nor makes a Connect wait: with nobody holding the name, a
// Connect to it is refused, and a Listen on the port takes it over.
func TestStaleListenerSocket(t *testing.T) {
	p := New(Config{Namespace: "godirect-nd-shm-test-" + t.Name()})
	a, _ := ndtest.OpenAdapters(t, p)
	prefix, err := p.t.names()
	if err != nil {
		t.Fatal(err)
	}
	const port = 40123
	name := p.t.listenName(prefix, DefaultAddresses[0], 0, port)
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: name, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	ln.SetUnlinkOnClose(false)
	ln.Close()
	t.Cleanup(func() { os.Remove(name) })
	if _, err := os.Stat(name); err != nil {
		t.Fatal("the stale socket file is not there:", err)
	}

	s := ndtest.NewSide(t, a, nd.EndpointLimits{InboundEntries: 4, OutboundEntries: 4, InboundSGE: 1, OutboundSGE: 1}, 8, false)
	err = s.Connector.Connect(t.Context(), s.Endpoint, netip.AddrPortFrom(DefaultAddresses[0], port), 0, 0, nil)
	if !errors.Is(err, nd.ErrConnectionRefused) {
		t.Fatalf("Connect to the stale socket: %v, want ND_CONNECTION_REFUSED", err)
	}
	l, err := a.Listen(4, 0, port)
	if err != nil {
		t.Fatalf("Listen on the stale socket's port: %v", err)
	}
	l.Close()
	if _, err := os.Stat(name); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the listener's socket file after Close: %v", err)
	}
}
