//go:build unix

package tcp_test

// TestPeerKilled: the peer of a busy connection is a child process (this
// test binary, re-executed) that is killed with SIGKILL, or stopped with
// SIGSTOP (its TCP stack keeps the connection up, the process answers
// nothing), while the parent has Sends waiting for confirmation, Reads in
// flight and Receives posted. Every pending request must complete with
// ErrCanceled or ErrIOTimeout (ErrIOTimeout when stopped) within a small
// multiple of the configured bounds, NotifyDisconnect must return, and no
// goroutine of the transport or the engine may remain.

import (
	"bytes"
	"context"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/godirect/nd"
	"github.com/godirect/nd/provider/tcp"
)

// killChildEnv turns the test binary into the child of TestPeerKilled; its
// value is the parent's listening address.
const killChildEnv = "GODIRECT_TCP_KILL_CHILD"

const (
	killProtocol     = 78
	killResponse     = time.Second // ResponseTimeout
	killWindow       = 1 << 20     // the child's window
	killChunk        = 64 << 10    // bytes per Read and Write
	killChildRecvs   = 1024        // Receives the child posts (the parent sends fewer)
	killMsg          = 256         // bytes per Send
	killReads        = 4           // Reads the parent keeps in flight (its ORD)
	killSends        = 4           // Sends the parent keeps waiting
	killWrites       = 2           // Writes the parent keeps in flight
	killParentRecvs  = 8           // Receives the parent keeps posted
	killWarmup       = 200         // completions before the signal
	killMaxPipelined = 5000        // bound on the requests the parent posts
)

func killConfig() tcp.Config {
	cfg := tcp.DefaultConfig()
	cfg.Addresses = []netip.Addr{netip.MustParseAddr("127.0.0.1")}
	cfg.HandshakeTimeout = 2 * time.Second
	cfg.ReplyTimeout = 5 * time.Second
	cfg.KeepAlive = time.Second
	cfg.KeepAliveInterval = time.Second
	cfg.KeepAliveCount = 2
	cfg.ResponseTimeout = killResponse
	return cfg
}

func TestPeerKilled(t *testing.T) {
	if addr := os.Getenv(killChildEnv); addr != "" {
		if err := runKillChild(addr); err != nil {
			fmt.Fprintln(os.Stderr, "child:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	t.Run("SIGKILL", func(t *testing.T) { testPeerGone(t, syscall.SIGKILL) })
	t.Run("SIGSTOP", func(t *testing.T) { testPeerGone(t, syscall.SIGSTOP) })
}

// runKillChild connects to the parent, exposes a window, sends its
// descriptor and waits until the connection ends (or a minute passes).
func runKillChild(addr string) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	parent, err := netip.ParseAddrPort(addr)
	if err != nil {
		return err
	}
	ad, err := tcp.New(killConfig()).OpenAdapter(netip.MustParseAddr("127.0.0.1"))
	if err != nil {
		return err
	}
	defer ad.Close()
	cq, err := ad.CreateCompletionQueue(2 * killChildRecvs)
	if err != nil {
		return err
	}
	conn, err := ad.CreateConnector()
	if err != nil {
		return err
	}
	ep, err := conn.CreateEndpoint(cq, cq, nd.EndpointLimits{
		InboundEntries: killChildRecvs, OutboundEntries: 8, InboundSGE: 1, OutboundSGE: 1,
		InboundReadLimit: 2 * killReads, OutboundReadLimit: 0,
	})
	if err != nil {
		return err
	}
	buf := make([]byte, killWindow+killChildRecvs*killMsg+nd.MWDescriptorSize)
	mr, err := ad.RegisterMemory(ctx, buf)
	if err != nil {
		return err
	}
	recvs := make([]nd.Result, killChildRecvs)
	for i := range recvs {
		o := killWindow + i*killMsg
		if err := ep.Receive(&recvs[i], []nd.SGE{{Buffer: buf[o : o+killMsg], Region: mr}}); err != nil {
			return err
		}
	}
	if err := conn.Connect(ctx, ep, parent, killProtocol, 0, nil); err != nil {
		return fmt.Errorf("Connect: %w", err)
	}
	if err := conn.CompleteConnect(ctx); err != nil {
		return fmt.Errorf("CompleteConnect: %w", err)
	}
	mw, err := ad.CreateMemoryWindow(nil)
	if err != nil {
		return err
	}
	var bind, send nd.Result
	desc, err := ep.Bind(&bind, mr, mw, buf[:killWindow], nd.FlagAllowRead|nd.FlagAllowWrite|nd.FlagSilentSuccess)
	if err != nil {
		return err
	}
	d := buf[len(buf)-nd.MWDescriptorSize:]
	desc.Put(d)
	if err := ep.Send(&send, []nd.SGE{{Buffer: d, Region: mr}}, nd.FlagSilentSuccess); err != nil {
		return err
	}
	return conn.NotifyDisconnect(ctx)
}

// lockedBuffer collects the child's output.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

type killKind uint8

const (
	kindRecv killKind = iota
	kindSend
	kindRead
	kindWrite
)

var killKindNames = [...]string{"Receive", "Send", "Read", "Write"}

func testPeerGone(t *testing.T, sig syscall.Signal) {
	baseline := len(settleProviderGoroutines(0, 5*time.Second))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	ad, err := tcp.New(killConfig()).OpenAdapter(netip.MustParseAddr("127.0.0.1"))
	if err != nil {
		t.Fatalf("OpenAdapter: %v", err)
	}
	closed := false
	closeAll := func() {
		if !closed {
			closed = true
			ad.Close()
		}
	}
	defer closeAll()
	ln, err := ad.Listen(0, killProtocol, 0)
	if err != nil {
		t.Fatalf("Listen: %v", err)
	}

	// The child.
	var out lockedBuffer
	cmd := exec.Command(os.Args[0], "-test.run=^TestPeerKilled$", "-test.count=1")
	cmd.Env = append(os.Environ(), killChildEnv+"="+netip.AddrPortFrom(ad.Address(), ln.Port()).String())
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting the child: %v", err)
	}
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()
	reaped := false
	reap := func() {
		if reaped {
			return
		}
		reaped = true
		cmd.Process.Signal(syscall.SIGCONT)
		cmd.Process.Kill()
		select {
		case <-waited:
		case <-time.After(10 * time.Second):
			t.Errorf("the child did not exit within 10s of SIGKILL")
		}
	}
	defer reap()

	conn, err := ad.CreateConnector()
	if err != nil {
		t.Fatal(err)
	}
	if err := ln.GetConnectionRequest(ctx, conn); err != nil {
		t.Fatalf("GetConnectionRequest: %v; child output:\n%s", err, out.String())
	}
	inCQ, err := ad.CreateCompletionQueue(64)
	if err != nil {
		t.Fatal(err)
	}
	outCQ, err := ad.CreateCompletionQueue(64)
	if err != nil {
		t.Fatal(err)
	}
	ep, err := conn.CreateEndpoint(inCQ, outCQ, nd.EndpointLimits{
		InboundEntries: killParentRecvs, OutboundEntries: 32, InboundSGE: 1, OutboundSGE: 1,
		InboundReadLimit: 0, OutboundReadLimit: killReads,
	})
	if err != nil {
		t.Fatal(err)
	}
	readBuf := make([]byte, killReads*killChunk)
	writeBuf := make([]byte, killChunk)
	sendBuf := make([]byte, killMsg)
	recvBuf := make([]byte, killParentRecvs*killMsg)
	for i := range writeBuf {
		writeBuf[i] = byte(i)
	}
	var mrs []nd.MemoryRegion
	for _, b := range [][]byte{readBuf, writeBuf, sendBuf, recvBuf} {
		mr, err := ad.RegisterMemory(ctx, b)
		if err != nil {
			t.Fatal(err)
		}
		mrs = append(mrs, mr)
	}
	readMR, writeMR, sendMR, recvMR := mrs[0], mrs[1], mrs[2], mrs[3]

	// Every request in flight, by its Result.
	kinds := make(map[*nd.Result]killKind)
	recvs := make([]nd.Result, killParentRecvs)
	for i := range recvs {
		if err := ep.Receive(&recvs[i], []nd.SGE{{Buffer: recvBuf[i*killMsg : (i+1)*killMsg], Region: recvMR}}); err != nil {
			t.Fatal(err)
		}
		kinds[&recvs[i]] = kindRecv
	}
	if err := conn.Accept(ctx, ep, nil); err != nil {
		t.Fatalf("Accept: %v; child output:\n%s", err, out.String())
	}
	// The child's descriptor arrives in the first Receive.
	r := waitResult(inCQ, time.Now().Add(10*time.Second))
	if r != &recvs[0] || r.Status != nd.Success || r.BytesTransferred != nd.MWDescriptorSize {
		t.Fatalf("descriptor Receive: %+v; child output:\n%s", r, out.String())
	}
	delete(kinds, r)
	var remote nd.MWDescriptor
	remote.UnmarshalBinary(recvBuf[:nd.MWDescriptorSize])
	if err := ep.Receive(&recvs[0], []nd.SGE{{Buffer: recvBuf[:killMsg], Region: recvMR}}); err != nil {
		t.Fatal(err)
	}
	kinds[&recvs[0]] = kindRecv

	// The transfer: keep Reads, Writes and Sends in flight.
	pool := map[killKind][]*nd.Result{}
	for k, n := range map[killKind]int{kindRead: killReads, kindWrite: killWrites, kindSend: killSends} {
		for i := 0; i < n; i++ {
			pool[k] = append(pool[k], new(nd.Result))
		}
	}
	slot := make(map[*nd.Result]int)
	for _, rs := range pool {
		for i, r := range rs {
			slot[r] = i
		}
	}
	posted := 0
	post := func(r *nd.Result, k killKind) {
		var err error
		i := slot[r]
		switch k {
		case kindRead:
			err = ep.Read(r, []nd.SGE{{Buffer: readBuf[i*killChunk : (i+1)*killChunk], Region: readMR}}, remote, uint64(i*killChunk), 0)
		case kindWrite:
			err = ep.Write(r, []nd.SGE{{Buffer: writeBuf, Region: writeMR}}, remote, uint64((killReads+i)*killChunk), 0)
		case kindSend:
			err = ep.Send(r, []nd.SGE{{Buffer: sendBuf, Region: sendMR}}, 0)
		}
		if err != nil {
			t.Fatalf("posting a %s: %v", killKindNames[k], err)
		}
		kinds[r] = k
		posted++
	}
	for k, rs := range pool {
		for _, r := range rs {
			post(r, k)
		}
	}
	completed := 0
	deadline := time.Now().Add(20 * time.Second)
	for completed < killWarmup {
		r := waitResult(outCQ, deadline)
		if r == nil {
			t.Fatalf("the transfer stalled after %d completions; child output:\n%s", completed, out.String())
		}
		if r.Status != nd.Success {
			t.Fatalf("%s completed %v during the transfer; child output:\n%s", killKindNames[kinds[r]], r.Status, out.String())
		}
		completed++
		k := kinds[r]
		delete(kinds, r)
		// Sends are refilled only while the child's Receives last.
		if posted < killMaxPipelined && (k != kindSend || posted < killChildRecvs/2) {
			post(r, k)
		}
	}
	pending := map[killKind]int{}
	for _, k := range kinds {
		pending[k]++
	}
	total := len(kinds)
	if pending[kindRead] == 0 || pending[kindSend]+pending[kindWrite] == 0 || pending[kindRecv] != killParentRecvs {
		t.Fatalf("not enough in flight at the signal: %v", pending)
	}

	// The signal.
	if err := cmd.Process.Signal(sig); err != nil {
		t.Fatalf("signal %v: %v", sig, err)
	}
	signaled := time.Now()
	bound := 3 * killResponse // SIGKILL: the kernel closes the child's socket at once
	if sig == syscall.SIGSTOP {
		// The watchdog needs between one and two ResponseTimeouts, the
		// writer and the reader one second each to give up on the peer.
		bound = 2*killResponse + 2*time.Second + 2*killResponse
	}

	ndCtx, ndCancel := context.WithTimeout(ctx, bound+5*time.Second)
	defer ndCancel()
	discDone := make(chan error, 1)
	var discAfter time.Duration
	go func() {
		err := conn.NotifyDisconnect(ndCtx)
		discAfter = time.Since(signaled)
		discDone <- err
	}()

	// Every request still pending completes. In post order, Sends, Reads
	// and Writes whose answer was already on its way may still succeed
	// (and are posted again); after the first failure only the allowed
	// errors may follow.
	statuses := map[nd.Status]int{}
	failedAfter := map[killKind]int{}
	outFailed := false
	lastDone := signaled
	end := signaled.Add(bound + 5*time.Second)
	for len(kinds) > 0 {
		var r *nd.Result
		if pending[kindRecv] > 0 {
			if r = waitResult(inCQ, time.Now()); r == nil {
				r = waitResult(outCQ, time.Now().Add(10*time.Millisecond))
			}
		} else {
			r = waitResult(outCQ, end)
		}
		if r == nil {
			if time.Now().After(end) {
				break
			}
			continue
		}
		lastDone = time.Now()
		k, ok := kinds[r]
		if !ok {
			t.Errorf("completion of an unknown Result %p (%v)", r, r.Status)
			continue
		}
		delete(kinds, r)
		if k == kindRecv {
			pending[kindRecv]--
		}
		statuses[r.Status]++
		switch {
		case r.Status == nd.Success && k != kindRecv && !outFailed:
			// Its answer left the child before the signal took effect.
			// Keep the transfer going, so that requests wait for the
			// peer once it is gone.
			if posted < killMaxPipelined && (k != kindSend || posted < killChildRecvs/2) {
				post(r, k)
			}
		case r.Status == nd.ErrIOTimeout, r.Status == nd.ErrCanceled:
			if k != kindRecv {
				outFailed = true
			}
			failedAfter[k]++
			if sig == syscall.SIGSTOP && k != kindRecv && r.Status != nd.ErrIOTimeout {
				t.Errorf("%s completed %v after SIGSTOP, want ND_IO_TIMEOUT", killKindNames[k], r.Status)
			}
		default:
			t.Errorf("%s completed %v after %v", killKindNames[k], r.Status, sig)
		}
	}
	pending[kindRecv] = killParentRecvs
	elapsed := lastDone.Sub(signaled)
	t.Logf("after %v: %d requests pending at the signal (%v), completions %v, failed %v, in %v (bound %v)",
		sig, total, pending, statuses, failedAfter, elapsed.Round(time.Millisecond), bound)
	if len(kinds) > 0 {
		left := map[string]int{}
		for _, k := range kinds {
			left[killKindNames[k]]++
		}
		t.Errorf("%d requests still pending %v after %v: %v", len(kinds), time.Since(signaled).Round(time.Millisecond), sig, left)
	}
	if elapsed > bound {
		t.Errorf("the pending requests took %v to complete after %v, more than %v", elapsed, sig, bound)
	}
	if !outFailed {
		t.Errorf("no outbound request failed after %v", sig)
	}
	if failedAfter[kindRecv] != killParentRecvs {
		t.Errorf("%d of %d Receives failed after %v", failedAfter[kindRecv], killParentRecvs, sig)
	}
	select {
	case err := <-discDone:
		if err != nil {
			t.Errorf("NotifyDisconnect: %v", err)
		}
		if discAfter > bound {
			t.Errorf("NotifyDisconnect returned %v after the signal, more than %v", discAfter, bound)
		}
	case <-time.After(bound + 5*time.Second):
		t.Errorf("NotifyDisconnect did not return within %v of %v", bound+5*time.Second, sig)
	}

	// Nothing of the connection may remain: the endpoint's objects
	// closed, the child gone, the adapter closed.
	ep.Close()
	conn.Close()
	ln.Close()
	reap()
	closeAll()
	if gs := settleProviderGoroutines(baseline, 5*time.Second); len(gs) > baseline {
		t.Errorf("%d goroutines in provider/tcp or internal/engine remain (baseline %d):\n%s",
			len(gs), baseline, strings.Join(gs, "\n\n"))
	}
}
