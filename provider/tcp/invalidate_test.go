package tcp_test

// TestInvalidateWaitsForTransfers: a raw iWARP client (hostile_test.go's)
// starts a remote access on a window of a godirect server and stalls in
// the middle of it. The server's Invalidate of the window must not
// complete while the access still moves bytes of the window, nor a
// DeregisterMemory of the region return; once the client lets the access
// finish, the Invalidate completes and the bytes are whole.

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

	"github.com/godirect/nd"
	"github.com/godirect/nd/internal/engine"
	"github.com/godirect/nd/internal/iwarp"
)

// fenceServer is the server side: one connection, one window over region.
type fenceServer struct {
	ad     nd.Adapter
	cq     nd.CompletionQueue
	ep     nd.Endpoint
	mr     nd.MemoryRegion
	mw     nd.MemoryWindow
	desc   nd.MWDescriptor
	region []byte
}

// newFenceServer accepts the raw client's connection (acceptRaw) and binds
// a window with rights over all of region.
func newFenceServer(t *testing.T, region []byte, rights nd.Flags) (*fenceServer, *hpRaw) {
	t.Helper()
	limits := nd.EndpointLimits{
		InboundEntries: 4, OutboundEntries: 8, InboundSGE: 1, OutboundSGE: 1, InboundReadLimit: hpServerIRD,
	}
	ad, raw, acc := acceptRaw(t, limits, 16, func(*hpMPAOpts) {})
	s := &fenceServer{ad: ad, cq: acc.cq, ep: acc.ep, region: region}
	var err error
	if s.mr, err = ad.RegisterMemory(context.Background(), region); err != nil {
		t.Fatal(err)
	}
	if s.mw, err = ad.CreateMemoryWindow(nil); err != nil {
		t.Fatal(err)
	}
	var bind nd.Result
	if s.desc, err = s.ep.Bind(&bind, s.mr, s.mw, region, rights); err != nil {
		t.Fatal(err)
	}
	if r := waitResult(s.cq, time.Now().Add(5*time.Second)); r != &bind || r.Status != nd.Success {
		t.Fatalf("Bind completed %v, want its Result with Success", r)
	}
	return s, raw
}

// invalidate posts an Invalidate of the window and checks, over many
// polls, that it does not complete while the client stalls.
func (s *fenceServer) invalidate(t *testing.T) *nd.Result {
	t.Helper()
	res := new(nd.Result)
	if err := s.ep.Invalidate(res, s.mw, 0); err != nil {
		t.Fatal(err)
	}
	var out [1]*nd.Result
	for range 2000 {
		if s.cq.GetResults(out[:]) == 1 {
			t.Fatalf("a completion (%v) came while the remote access was in progress: the Invalidate did not wait for it", out[0].Status)
		}
	}
	return res
}

// deregisterWaits checks that DeregisterMemory of the region does not
// return before its deadline while the access is in progress.
func (s *fenceServer) deregisterWaits(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	err := s.ad.DeregisterMemory(ctx, s.mr)
	if !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, nd.ErrCanceled) {
		t.Fatalf("DeregisterMemory during a remote access returned %v, want it to wait until its context ends", err)
	}
}

// finish waits for the Invalidate to complete, then deregisters.
func (s *fenceServer) finish(t *testing.T, inv *nd.Result) {
	t.Helper()
	if r := waitResult(s.cq, time.Now().Add(5*time.Second)); r != inv || r.Status != nd.Success {
		t.Fatalf("after the access ended: completion %v, want the Invalidate with Success", r)
	}
	if err := s.ad.DeregisterMemory(context.Background(), s.mr); err != nil {
		t.Fatalf("DeregisterMemory after the access: %v", err)
	}
}

func TestInvalidateWaitsForInboundWrite(t *testing.T) {
	const n = 60000 // one FPDU
	s, raw := newFenceServer(t, make([]byte, n), nd.FlagAllowWrite)
	data := hpBytes(n, 7)
	frame := raw.write(s.desc, 0, data)
	cut := len(frame) / 3
	if err := raw.put(frame[:cut]); err != nil {
		t.Fatal(err)
	}
	// Poll until the server is in the middle of the Write's payload: it
	// holds the window (a reader goroutine, where there is one, blocks in
	// the socket meanwhile).
	var out [1]*nd.Result
	deadline := time.Now().Add(10 * time.Second)
	for {
		if s.cq.GetResults(out[:]) != 0 {
			t.Fatalf("unexpected completion %v", out[0].Status)
		}
		if engine.WindowHeld(s.mw) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the server did not start placing the Write")
		}
	}
	inv := s.invalidate(t)
	s.deregisterWaits(t)
	if err := raw.put(frame[cut:]); err != nil {
		t.Fatal(err)
	}
	s.finish(t, inv)
	if !bytes.Equal(s.region, data) {
		t.Fatal("the Write accepted before the Invalidate did not land whole")
	}
	// The window is gone: a Write to it now ends the connection with an
	// access error and leaves the memory alone.
	if err := raw.put(raw.write(s.desc, 0, hpBytes(16, 9))); err != nil {
		t.Fatal(err)
	}
	seg, err := raw.readSegment(5 * time.Second)
	if err != nil || seg.Opcode != iwarp.OpTerminate {
		t.Fatalf("after a Write to the invalidated window: %v %v, want a Terminate", seg.Opcode, err)
	}
	if !bytes.Equal(s.region, data) {
		t.Fatal("a Write after the Invalidate changed the memory")
	}
}

func TestInvalidateWaitsForReadResponse(t *testing.T) {
	// Larger than the loopback socket buffers of both sides can hold,
	// so the server's writer is still sending it while the client stalls.
	const n = 24 << 20
	region := hpBytes(n, 3)
	s, raw := newFenceServer(t, region, nd.FlagAllowRead)
	if err := raw.put(raw.readReq(s.desc.Token, s.desc.Base, n)); err != nil {
		t.Fatal(err)
	}
	// The first segment of the response proves that the server took the
	// request: from then on it sends from the window.
	var got bytes.Buffer
	var out [1]*nd.Result
	seg, err := raw.readSegment(10 * time.Second)
	if err != nil || seg.Opcode != iwarp.OpReadResponse {
		t.Fatalf("first response segment: %v %v", seg.Opcode, err)
	}
	got.Write(seg.Payload)
	if s.cq.GetResults(out[:]) != 0 {
		t.Fatalf("unexpected completion %v", out[0].Status)
	}
	inv := s.invalidate(t)
	s.deregisterWaits(t)
	for got.Len() < n {
		seg, err := raw.readSegment(10 * time.Second)
		if err != nil || seg.Opcode != iwarp.OpReadResponse {
			t.Fatalf("response segment at %d: %v %v", got.Len(), seg.Opcode, err)
		}
		got.Write(seg.Payload)
	}
	s.finish(t, inv)
	if !bytes.Equal(got.Bytes(), hpBytes(n, 3)) {
		t.Fatal("the Read response is not the window's content")
	}
}
