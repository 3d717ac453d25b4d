package tcp_test

import (
	"runtime"
	"testing"
	"time"

	"github.com/godirect/nd"
	"github.com/godirect/nd/ndtest"
	"github.com/godirect/nd/provider/tcp"
)

// TestIdleConnectionServedByPolls: in a process on one processor, the
// application polls one connection's completion queue without pause while
// the peer of another connection, idle until then, RDMA-Reads its memory.
// That connection's reader waits in the runtime's network poller, which
// such an application leaves no moment to run; the polls of the first
// connection must serve the Read. Both connections' ends are in this
// process; the Read's initiator is not polled either until the end.
func TestIdleConnectionServedByPolls(t *testing.T) {
	if !tcp.SpinSupported {
		t.Skip("polls serve readers only where sockets are read with raw non-blocking calls (Unix)")
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
	// Let every reader of the two connections go idle and park.
	deadline := time.Now().Add(10 * time.Second)
	for tcp.ParkedReaders(p) < 4 {
		if time.Now().After(deadline) {
			t.Fatalf("%d readers parked, want 4", tcp.ParkedReaders(p))
		}
		runtime.Gosched()
	}
	var res nd.Result
	if err := idle.Pair.Active.Endpoint.Read(&res, sgl, idle.Window, 0, 0); err != nil {
		t.Fatal(err)
	}
	var out [1]*nd.Result
	for range 20 * 32 {
		busy.Pair.Active.InCQ.GetResults(out[:])
	}
	if idle.Pair.Active.OutCQ.GetResults(out[:]) != 1 {
		t.Fatal("the idle connection's Read did not complete while the application polled the other connection")
	}
	if out[0] != &res || res.Status != nd.Success || res.BytesTransferred != 4096 {
		t.Fatalf("completion %p: %v, %d bytes; want %p, Success, 4096", out[0], res.Status, res.BytesTransferred, &res)
	}
	if string(buf) != string(idle.PBuf) {
		t.Fatal("the Read did not bring the window's bytes")
	}
}
