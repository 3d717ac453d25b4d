package remote_test

import (
	"bytes"
	"context"
	"errors"
	"net"
	"net/netip"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/godirect/nd"
	"github.com/godirect/nd/ndtest"
	"github.com/godirect/nd/ndtest/remote"
	"github.com/godirect/nd/provider/tcp"
)

var (
	localAddr  = netip.MustParseAddr("127.0.0.1")
	remoteAddr = netip.MustParseAddr("127.0.0.2")
)

func provider(addr netip.Addr) *tcp.Provider {
	cfg := tcp.DefaultConfig()
	cfg.Addresses = []netip.Addr{addr}
	return tcp.New(cfg)
}

// session runs Serve on a goroutine of this process, over an in-memory
// pipe, and returns the split provider; the session ends with the test.
func session(t *testing.T) *remote.SplitProvider {
	t.Helper()
	a, b := net.Pipe()
	served := make(chan error, 1)
	go func() { served <- remote.Serve(b, provider(remoteAddr)) }()
	c := remote.NewClient(a)
	t.Cleanup(func() {
		c.Close()
		if err := <-served; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return remote.Split(provider(localAddr), localAddr, remoteAddr, c)
}

func TestStatusesCross(t *testing.T) {
	sp := session(t)
	_, b := ndtest.OpenAdapters(t, sp)
	if _, err := b.CreateCompletionQueue(0); nd.StatusOf(err) != nd.ErrInvalidParameter || !errors.Is(err, nd.ErrInvalidParameter) {
		t.Errorf("CreateCompletionQueue(0) = %v; want ND_INVALID_PARAMETER", err)
	}
	if _, err := b.Listen(0, 256, 0); nd.StatusOf(err) != nd.ErrInvalidParameter2 {
		t.Errorf("Listen(protocol 256) = %v; want ND_INVALID_PARAMETER_2", err)
	}
	if _, err := sp.OpenAdapter(netip.MustParseAddr("192.0.2.250")); nd.StatusOf(err) != nd.ErrInvalidAddress {
		t.Errorf("OpenAdapter(unserved) = %v; want ND_INVALID_ADDRESS", err)
	}
	if !sp.OpenNetwork() {
		t.Error("OpenNetwork of a split TCP provider = false; the TCP provider says true")
	}
}

func TestCancelCrosses(t *testing.T) {
	sp := session(t)
	_, b := ndtest.OpenAdapters(t, sp)
	cq, err := b.CreateCompletionQueue(4)
	if err != nil {
		t.Fatal(err)
	}
	defer cq.Close()
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- cq.Notify(ctx, nd.NotifyAny) }()
	cancel()
	err = <-errc
	if !errors.Is(err, nd.ErrCanceled) || !errors.Is(err, context.Canceled) || nd.StatusOf(err) != nd.ErrCanceled {
		t.Fatalf("Notify canceled in the parent = %v; want ND_CANCELED caused by context.Canceled", err)
	}
	dctx, dcancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer dcancel()
	if err := cq.Notify(dctx, nd.NotifyAny); !errors.Is(err, nd.ErrCanceled) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Notify past its deadline = %v; want ND_CANCELED caused by context.DeadlineExceeded", err)
	}
}

// TestMemoryCrosses checks the memory rule: a Write into the child's window
// is in the parent's buffer once the writer's completion is reaped, the
// parent's changes reach the child before the next call, and GetResults of
// a proxied queue hands back the caller's own Results.
func TestMemoryCrosses(t *testing.T) {
	sp := session(t)
	pr := ndtest.NewPair(t, sp, ndtest.PairConfig{})
	win := make([]byte, 3*4096+5)
	mr := pr.Passive.Register(t, win)
	mw, err := pr.Passive.Adapter.CreateMemoryWindow(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer mw.Close()
	bindRes := new(nd.Result)
	desc, err := pr.Passive.Endpoint.Bind(bindRes, mr, mw, win, nd.FlagAllowRead|nd.FlagAllowWrite)
	if err != nil {
		t.Fatal(err)
	}
	ndtest.Expect(t, pr.Passive.OutCQ, bindRes, nd.Success, -1)

	data := bytes.Repeat([]byte("xyz"), 1000)
	src := append([]byte(nil), data...)
	smr := pr.Active.Register(t, src)
	wr := new(nd.Result)
	if err := pr.Active.Endpoint.Write(wr, []nd.SGE{{Buffer: src, Region: smr}}, desc, 4000, 0); err != nil {
		t.Fatal(err)
	}
	ndtest.Expect(t, pr.Active.OutCQ, wr, nd.Success, len(data))
	if !bytes.Equal(win[4000:4000+len(data)], data) {
		t.Fatal("the Write into the child's window is not in the parent's buffer after its completion")
	}

	// The parent changes its buffer; a Read through the window sees it.
	copy(win[12000:], "changed by the parent")
	dst := make([]byte, 21)
	dmr := pr.Active.Register(t, dst)
	rr := new(nd.Result)
	if err := pr.Active.Endpoint.Read(rr, []nd.SGE{{Buffer: dst, Region: dmr}}, desc, 12000, 0); err != nil {
		t.Fatal(err)
	}
	ndtest.Expect(t, pr.Active.OutCQ, rr, nd.Success, len(dst))
	if string(dst) != "changed by the parent" {
		t.Fatalf("Read through the child's window = %q", dst)
	}
}

// TestNoLeak checks that a session leaves no goroutine of the package
// behind once the client is closed and Serve has returned.
func TestNoLeak(t *testing.T) {
	t.Run("session", func(t *testing.T) {
		sp := session(t)
		ndtest.NewPair(t, sp, ndtest.PairConfig{})
	})
	buf := make([]byte, 1<<20)
	deadline := time.Now().Add(5 * time.Second)
	for {
		dump := string(buf[:runtime.Stack(buf, true)])
		if !strings.Contains(dump, "ndtest/remote.") {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("goroutines of the package are left after the session:\n%s", dump)
		}
		runtime.Gosched()
	}
}
