package tcp_test

import (
	"context"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/godirect/nd"
	"github.com/godirect/nd/ndtest"
	"github.com/godirect/nd/provider/tcp"
)

// TestIdleConnectionServedByPolls: in a process on one processor, the
// application polls one connection's completion queue without pause while
// the peer of another connection, idle until then, RDMA-Reads its memory.
// The provider's progress goroutine gets no moment to run while such an
// application polls; its polls of the first connection's queue must serve
// the Read through the provider's readiness set. Both connections' ends
// are in this process (on four adapters); the Read's initiator is not
// polled either until the end.
func TestIdleConnectionServedByPolls(t *testing.T) {
	if !tcp.PollsMoveBytes {
		t.Skip("the application's polls move the bytes only where the kernel offers a readiness set (Linux)")
	}
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	p := tcp.New(tcp.Config{})
	busy := ndtest.NewDataPath(t, p, 8)
	idle := ndtest.NewDataPath(t, p, 4096)
	buf := make([]byte, 4096)
	sgl := []nd.SGE{{Buffer: buf, Region: idle.Pair.Active.Register(t, buf)}}
	for i := range idle.PBuf {
		idle.PBuf[i] = byte(i*5 + 1)
	}
	if n := tcp.LinksInSet(p); n != 4 {
		t.Fatalf("%d links in the readiness set, want 4", n)
	}
	var res nd.Result
	if err := idle.Pair.Active.Endpoint.Read(&res, sgl, idle.Window, 0, 0); err != nil {
		t.Fatal(err)
	}
	// The progress goroutine serves only once no application has polled
	// for a while: while these polls go on, they alone move the bytes. A
	// loaded host may deliver loopback segments late, hence rounds of
	// polls until a deadline rather than a fixed count.
	var out [1]*nd.Result
	deadline := time.Now().Add(ndtest.Timeout)
	for {
		for range 20 * 32 {
			busy.Pair.Active.InCQ.GetResults(out[:])
		}
		if idle.Pair.Active.OutCQ.GetResults(out[:]) == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the idle connection's Read did not complete while the application polled the other connection")
		}
	}
	if out[0] != &res || res.Status != nd.Success || res.BytesTransferred != 4096 {
		t.Fatalf("completion %p: %v, %d bytes; want %p, Success, 4096", out[0], res.Status, res.BytesTransferred, &res)
	}
	if string(buf) != string(idle.PBuf) {
		t.Fatal("the Read did not bring the window's bytes")
	}
}

// TestNotifyParksOneGoroutine: with many idle connections on one completion
// queue a side, a Notify on that queue waits with one goroutine of the
// provider's waiting in the kernel for all of them (the progress
// goroutine), and none per connection; each link keeps at most its writer.
// A message on any connection then satisfies the Notify.
func TestNotifyParksOneGoroutine(t *testing.T) {
	if !tcp.PollsMoveBytes {
		t.Skip("without a readiness set of the kernel's (Linux), each connection has its reader goroutine")
	}
	const n = 48
	p := loopback()
	ps := ndtest.NewPeers(t, p, n, 64, true)
	ctx, cancel := context.WithTimeout(context.Background(), ndtest.Timeout)
	defer cancel()
	// A GetResults that finds the queue empty marks what came before as
	// seen, so that the Notify waits for the next completion.
	var out [2]*nd.Result
	if got := ps.PassiveCQ.GetResults(out[:]); got != 0 {
		t.Fatalf("%d completions on an idle queue", got)
	}
	done := make(chan error, 1)
	go func() { done <- ps.PassiveCQ.Notify(ctx, nd.NotifyAny) }()
	deadline := time.Now().Add(ndtest.Timeout)
	for !progressWaitsInKernel() {
		if time.Now().After(deadline) {
			t.Fatal("the progress goroutine did not wait in the kernel while Notify waited")
		}
		runtime.Gosched()
	}
	// Goroutines of the provider that end (a timer's) may show for a
	// moment: the count must settle within the bound.
	var readers, progress, writers, other int
	var others []string
	for {
		readers, progress, writers, other, others = 0, 0, 0, 0, nil
		for _, g := range providerGoroutines() {
			switch {
			case strings.Contains(g, "(*link).readLoop"):
				readers++
			case strings.Contains(g, "(*Handoff).Run"):
				progress++
			case strings.Contains(g, "(*link).writeLoop"):
				writers++
			default:
				other++
				others = append(others, g)
			}
		}
		if readers == 0 && progress == 1 && writers <= 2*n && other <= 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d connections idle under one Notify: %d reader goroutines (want 0), %d progress goroutines (want 1), %d writers (want at most %d), %d others (want at most 2: the Notify, the listener):\n%s",
				n, readers, progress, writers, 2*n, other, strings.Join(others, "\n\n"))
		}
		runtime.Gosched()
	}
	a := ps.Active[n/3]
	if err := a.Endpoint.Send(&a.Send, a.SGL, 0); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("Notify: %v", err)
	}
	got := ps.PassiveCQ.GetResults(out[:])
	for got == 0 && time.Now().Before(deadline) {
		got = ps.PassiveCQ.GetResults(out[:])
	}
	if got != 1 || out[0] != &ps.Passive[n/3].Recv || out[0].Status != nd.Success || out[0].BytesTransferred != 64 {
		t.Fatalf("after Notify: %d completions, first %p; want 1, connection %d's Receive %p with Success and 64 bytes", got, out[0], n/3, &ps.Passive[n/3].Recv)
	}
}

// TestLongWriteReadByPolls: both ends of a connection in this process, and
// the application only polls the sender's queue while a 64 MiB Send goes
// out in long writes: those polls, which yield the processor to a long
// write in progress, must also read the other end, whose bytes the write
// may be waiting for. (cmd/nd's TestPerfRCMLoopback, whose client and
// server share one provider, stalled when they did not.)
func TestLongWriteReadByPolls(t *testing.T) {
	if !tcp.PollsMoveBytes {
		t.Skip("the application's polls move the bytes only where the kernel offers a readiness set (Linux)")
	}
	const size = 64 << 20
	pr := ndtest.NewPair(t, loopback(), ndtest.PairConfig{SharedCQ: true})
	src, dst := make([]byte, size), make([]byte, size)
	for i := range src {
		src[i] = byte(i*7 + i>>16)
	}
	var send, recv nd.Result
	if err := pr.Passive.Endpoint.Receive(&recv, []nd.SGE{{Buffer: dst, Region: pr.Passive.Register(t, dst)}}); err != nil {
		t.Fatal(err)
	}
	if err := pr.Active.Endpoint.Send(&send, []nd.SGE{{Buffer: src, Region: pr.Active.Register(t, src)}}, 0); err != nil {
		t.Fatal(err)
	}
	var out [1]*nd.Result
	deadline := time.Now().Add(ndtest.Timeout)
	for pr.Active.OutCQ.GetResults(out[:]) == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("the Send did not complete within %v while the application polled", ndtest.Timeout)
		}
	}
	if out[0] != &send || send.Status != nd.Success || send.BytesTransferred != size {
		t.Fatalf("completion %p: %v, %d bytes; want the Send's, Success, %d", out[0], send.Status, send.BytesTransferred, size)
	}
	if pr.Passive.InCQ.GetResults(out[:]) != 1 || out[0] != &recv || recv.Status != nd.Success || recv.BytesTransferred != size {
		t.Fatalf("the Receive: %v, %d bytes; want Success, %d", recv.Status, recv.BytesTransferred, size)
	}
	if string(dst) != string(src) {
		t.Fatal("the Receive's bytes differ from the Send's")
	}
}

// progressWaitsInKernel reports whether a provider's progress goroutine
// waits in the kernel (a blocking epoll_wait) for its links to have bytes.
func progressWaitsInKernel() bool {
	for _, g := range providerGoroutines() {
		if strings.Contains(g, "[syscall") && strings.Contains(g, "(*readySet).wait") {
			return true
		}
	}
	return false
}
