//go:build linux

package tcp_test

import (
	"bytes"
	"context"
	"net/netip"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/godirect/nd"
	"github.com/godirect/nd/internal/iwarp"
	"github.com/godirect/nd/provider/tcp"
)

// TestReceivePause: while a Send arrives in segments, an application poll
// whose read found nothing stops the next polls from reading the socket
// for ReceivePause times as long as that poll took (ReceivePauseMax at
// most); the bytes that arrive meanwhile stay in the socket until the
// first poll after the pause, which completes the Receive with every
// byte. Outside a message nothing pauses. A raw
// iWARP client sends the segments when the test says; the test's clock
// makes the times exact, and the test holds the readiness set's lock so
// that only its own polls read the connection.
func TestReceivePause(t *testing.T) {
	var now, step atomic.Int64
	tcp.SetMonotime(t, func() int64 { return now.Add(step.Load()) })

	p, ad, cq, ep, raw := directServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)

	msg := hpPattern(200, 7)
	buf := make([]byte, len(msg)+8)
	mr, err := ad.RegisterMemory(ctx, buf)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ad.DeregisterMemory(context.Background(), mr) })
	var recv, recv2 nd.Result
	if err := ep.Receive(&recv, []nd.SGE{{Buffer: buf[:len(msg)], Region: mr}}); err != nil {
		t.Fatal(err)
	}
	if err := ep.Receive(&recv2, []nd.SGE{{Buffer: buf[len(msg):], Region: mr}}); err != nil {
		t.Fatal(err)
	}
	release := tcp.HoldReadySet(p)
	defer release()

	var out [1]*nd.Result
	noResult := func(what string) {
		t.Helper()
		if n := cq.GetResults(out[:]); n != 0 {
			t.Fatalf("%s: a poll took %d results", what, n)
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	overdue := func(what string) {
		t.Helper()
		if time.Now().After(deadline) {
			t.Fatalf("%s never happened", what)
		}
	}

	// The first half of the Send: the poll that reads it marks the link
	// inside a message (pause 1: the next poll is timed).
	if err := raw.put(raw.sendSeg(iwarp.OpSend, 1, 0, msg[:100], false)); err != nil {
		t.Fatal(err)
	}
	for tcp.ReadAfter(p) == 0 {
		noResult("before the first half was read")
		overdue("reading the first half")
	}
	if got := tcp.ReadAfter(p); got != 1 {
		t.Fatalf("pause after the first half = %d, want 1 (timed from the next poll)", got)
	}
	// The next poll reads at 100 and finds nothing at 200: no read before
	// 200 + ReceivePause*100.
	step.Store(100)
	noResult("the empty poll")
	step.Store(0)
	if got, want := tcp.ReadAfter(p), now.Load()+tcp.ReceivePause*100; got != want {
		t.Fatalf("no read before %d, want %d", got, want)
	}
	// A poll that took longer (descheduled) pauses ReceivePauseMax at most.
	now.Store(tcp.ReadAfter(p))
	step.Store(int64(time.Millisecond))
	noResult("the slow empty poll")
	step.Store(0)
	if got, want := tcp.ReadAfter(p), now.Load()+int64(tcp.ReceivePauseMax); got != want {
		t.Fatalf("after a slow poll, no read before %d, want %d", got, want)
	}
	last := raw.sendSeg(iwarp.OpSend, 1, 100, msg[100:], true)
	if err := raw.put(last); err != nil {
		t.Fatal(err)
	}
	for polls := 0; tcp.DirectQueued(p) < len(last) || polls < 100; polls++ {
		noResult("a poll before the pause ended")
		overdue("the second half reaching the socket")
	}
	now.Store(tcp.ReadAfter(p))
	if n := cq.GetResults(out[:]); n != 1 || out[0] != &recv || recv.Status != nd.Success || recv.BytesTransferred != len(msg) {
		t.Fatalf("the first poll after the pause: %d results (%+v), want the Receive with %d bytes", n, recv, len(msg))
	}
	if !bytes.Equal(buf[:len(msg)], msg) {
		t.Fatal("the Receive's bytes differ from the Send's")
	}
	if got := tcp.ReadAfter(p); got != 0 {
		t.Fatalf("pause after the message = %d, want 0", got)
	}

	// A Send in one segment, with the clock stopped: the first poll after
	// it reached the socket delivers it.
	if err := raw.put(raw.sendSeg(iwarp.OpSend, 2, 0, msg[:8], true)); err != nil {
		t.Fatal(err)
	}
	for tcp.DirectQueued(p) == 0 {
		overdue("the one-segment Send reaching the socket")
	}
	if n := cq.GetResults(out[:]); n != 1 || out[0] != &recv2 || recv2.Status != nd.Success || recv2.BytesTransferred != 8 {
		t.Fatalf("the poll after a one-segment Send: %d results (%+v), want the second Receive with 8 bytes", n, recv2)
	}
	if !bytes.Equal(buf[len(msg):], msg[:8]) {
		t.Fatal("the second Receive's bytes differ from the Send's")
	}
}

// TestDirectPlacement: the payloads of a provider's one link, which the
// application's polls read directly, go straight into place (readv, with
// what follows into the reader's buffer) and keep to the Receive's bounds.
// A Send in three segments of 60000 bytes fills a 192 KiB Receive with
// every byte in order; a 60000-byte Send into a 32 KiB Receive completes
// it with ErrBufferOverflow, leaves every byte outside it as it was, and
// the client gets a Terminate (DDP untagged, message too long). The test
// holds the readiness set's lock, so that only its polls read.
func TestDirectPlacement(t *testing.T) {
	p, ad, cq, ep, raw := directServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	const guard = 4096
	region := hpPattern(guard+192<<10+guard, 3)
	mr, err := ad.RegisterMemory(ctx, region)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ad.DeregisterMemory(context.Background(), mr) })
	poll := func(want *nd.Result) {
		t.Helper()
		var out [1]*nd.Result
		for deadline := time.Now().Add(10 * time.Second); cq.GetResults(out[:]) == 0; {
			if time.Now().After(deadline) {
				t.Fatal("no completion within 10 s")
			}
		}
		if out[0] != want {
			t.Fatalf("completion %p, want %p", out[0], want)
		}
	}
	unchanged := func(before []byte, lo, hi int) {
		t.Helper()
		if !bytes.Equal(region[:lo], before[:lo]) || !bytes.Equal(region[hi:], before[hi:]) {
			t.Fatalf("bytes outside the Receive [%d, %d) changed", lo, hi)
		}
	}

	// Only the test's polls read the connection.
	release := tcp.HoldReadySet(p)
	defer release()

	// The snapshots are taken before each Receive is posted: from then
	// on its buffer is the provider's.
	before := slices.Clone(region)
	var whole nd.Result
	if err := ep.Receive(&whole, []nd.SGE{{Buffer: region[guard : guard+192<<10], Region: mr}}); err != nil {
		t.Fatal(err)
	}
	msg := hpPattern(180000, 5)
	if err := raw.put(raw.sendSeg(iwarp.OpSend, 1, 0, msg[:60000], false),
		raw.sendSeg(iwarp.OpSend, 1, 60000, msg[60000:120000], false),
		raw.sendSeg(iwarp.OpSend, 1, 120000, msg[120000:], true)); err != nil {
		t.Fatal(err)
	}
	poll(&whole)
	if whole.Status != nd.Success || whole.BytesTransferred != len(msg) {
		t.Fatalf("the Receive: %v, %d bytes; want Success, %d", whole.Status, whole.BytesTransferred, len(msg))
	}
	if !bytes.Equal(region[guard:guard+len(msg)], msg) {
		t.Fatal("the Receive's bytes differ from the Send's")
	}
	unchanged(before, guard, guard+len(msg))

	before = slices.Clone(region)
	var short nd.Result
	if err := ep.Receive(&short, []nd.SGE{{Buffer: region[guard : guard+32768], Region: mr}}); err != nil {
		t.Fatal(err)
	}
	if err := raw.put(raw.sendSeg(iwarp.OpSend, 2, 0, hpPattern(60000, 6), true)); err != nil {
		t.Fatal(err)
	}
	poll(&short)
	if short.Status != nd.ErrBufferOverflow {
		t.Fatalf("a Send longer than the Receive: %v, want ErrBufferOverflow", short.Status)
	}
	unchanged(before, guard, guard+32768)
	for {
		seg, err := raw.readSegment(5 * time.Second)
		if err != nil {
			t.Fatalf("no Terminate from the server: %v", err)
		}
		if seg.Opcode != iwarp.OpTerminate {
			continue
		}
		term, err := iwarp.ParseTerminate(seg.Payload)
		if err != nil {
			t.Fatal(err)
		}
		if !ddpUntagged(iwarp.TermCodeMessageTooLong).match(term) {
			t.Fatalf("Terminate %+v, want DDP untagged, message too long", term)
		}
		return
	}
}

// directServer connects a raw iWARP client (MPA CRC on) to a provider
// whose one link the test's polls read directly (pollDirect), with one
// completion queue for everything; the server's endpoint takes 4
// requests a queue, of one entry each.
func directServer(t *testing.T) (*tcp.Provider, nd.Adapter, nd.CompletionQueue, nd.Endpoint, *hpRaw) {
	t.Helper()
	p := tcp.New(hpConfig())
	ad, err := p.OpenAdapter(netip.MustParseAddr("127.0.0.1"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ad.Close() })
	ln, err := ad.Listen(0, hpProtocol, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	cq, err := ad.CreateCompletionQueue(8)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cq.Close() })
	c, err := ad.CreateConnector()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)

	// The server accepts on its own goroutine while the raw client shakes
	// hands.
	accepted := make(chan error, 1)
	var ep nd.Endpoint
	go func() {
		if err := ln.GetConnectionRequest(ctx, c); err != nil {
			accepted <- err
			return
		}
		e, err := c.CreateEndpoint(cq, cq, nd.EndpointLimits{InboundEntries: 4, OutboundEntries: 4, InboundSGE: 1, OutboundSGE: 1, InboundReadLimit: hpServerIRD})
		if err != nil {
			accepted <- err
			return
		}
		ep = e
		accepted <- c.Accept(ctx, e, nil)
	}()
	raw := hpDial(t, netip.AddrPortFrom(ad.Address(), ln.Port()))
	raw.handshake(hpDefaultOpts(true))
	if err := raw.put(raw.rtr()); err != nil {
		t.Fatalf("writing the RTR: %v", err)
	}
	if err := <-accepted; err != nil {
		t.Fatalf("server: %v", err)
	}
	t.Cleanup(func() { ep.Close() })

	return p, ad, cq, ep, raw
}
