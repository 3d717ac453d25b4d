//go:build linux

package tcp_test

import (
	"context"
	"errors"
	"net/netip"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/godirect/nd"
	"github.com/godirect/nd/ndtest"
)

const descriptorsChildEnv = "GODIRECT_TCP_DESCRIPTORS_CHILD"

// TestRunningOutOfDescriptors: in a process whose descriptors ran out, a
// Connect fails with ND_INSUFFICIENT_RESOURCES naming the descriptors (not
// a refusal, nor an abandoned connection), the accept loop does not spin,
// and the connections made before keep carrying their traffic. It runs in a
// child process, whose descriptor limit it lowers.
func TestRunningOutOfDescriptors(t *testing.T) {
	if os.Getenv(descriptorsChildEnv) != "" {
		outOfDescriptors(t)
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestRunningOutOfDescriptors$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), descriptorsChildEnv+"=1")
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS: TestRunningOutOfDescriptors") {
		t.Fatalf("the child failed (%v):\n%s", err, out)
	}
}

// outOfDescriptors is the child's part.
func outOfDescriptors(t *testing.T) {
	p := loopback()
	ps := ndtest.NewPeers(t, p, 4, 64, true)
	a, b := ndtest.OpenAdapters(t, p)
	l, err := b.Listen(0, ndtest.Protocol, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	cq, err := a.CreateCompletionQueue(16)
	if err != nil {
		t.Fatal(err)
	}
	defer cq.Close()
	// No descriptor is left to open: the limit is the lowest free number.
	open := map[int]bool{}
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fds {
		if n, err := strconv.Atoi(f.Name()); err == nil {
			open[n] = true
		}
	}
	free := 0
	for open[free] {
		free++
	}
	var old syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &old); err != nil {
		t.Fatal(err)
	}
	limit := syscall.Rlimit{Cur: uint64(free), Max: old.Max}
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &limit); err != nil {
		t.Fatal(err)
	}
	// Below the limit, ReadDir's own descriptor is free again: take it.
	var held []*os.File
	for {
		f, err := os.Open(os.DevNull)
		if err != nil {
			break
		}
		held = append(held, f)
	}
	defer func() {
		for _, f := range held {
			f.Close()
		}
	}()
	refused := false
	for i := 0; i < 3 && !refused; i++ {
		conn, err := a.CreateConnector()
		if err != nil {
			t.Fatalf("CreateConnector: %v", err)
		}
		ep, err := conn.CreateEndpoint(cq, cq, ndtest.PeerLimits)
		if err != nil {
			t.Fatalf("CreateEndpoint: %v", err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		err = conn.Connect(ctx, ep, netip.AddrPortFrom(b.Address(), l.Port()), ndtest.Protocol, 0, nil)
		cancel()
		switch {
		case errors.Is(err, nd.ErrInsufficientResources):
			if !strings.Contains(err.Error(), "file descriptors") {
				t.Fatalf("Connect: %v; want the error to name the file descriptors", err)
			}
			t.Logf("Connect: %v", err)
			refused = true
		case errors.Is(err, nd.ErrCanceled):
			// The connect took the last descriptor, and the accept
			// found none: the request waits in the listen queue.
		default:
			t.Fatalf("Connect with no descriptor left: %v; want ND_INSUFFICIENT_RESOURCES", err)
		}
		ep.Close()
		conn.Close()
	}
	if !refused {
		t.Fatal("no Connect failed with ND_INSUFFICIENT_RESOURCES")
	}
	// The connections made before go on, also with no descriptor left.
	for range 10 {
		ps.Round(t)
	}
	syscall.Setrlimit(syscall.RLIMIT_NOFILE, &old)
}
