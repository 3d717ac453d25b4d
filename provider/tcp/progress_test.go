package tcp_test

import (
	"runtime"
	"testing"

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
