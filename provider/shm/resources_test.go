//go:build linux

package shm_test

import (
	"context"
	"errors"
	"net/netip"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/godirect/nd"
	"github.com/godirect/nd/ndtest"
	"github.com/godirect/nd/provider/shm"
)

const envNoFile = "GODIRECT_SHM_TEST_NOFILE"

// TestOutOfDescriptors: in a child process whose RLIMIT_NOFILE leaves room
// for a few connections, connections are made until one fails. It fails
// with ND_INSUFFICIENT_RESOURCES and a message naming file descriptors,
// never with another status and never by hanging, and the connections
// made before it still carry Sends both ways. The limits tried make the
// active side run out (its eventfds, its segment) and the passive side
// (the descriptors passed with the request: the active side learns it
// from the short message).
func TestOutOfDescriptors(t *testing.T) {
	room := os.Getenv(envNoFile)
	if room == "" {
		for _, room := range []string{"48", "51", "55"} {
			cmd := exec.Command(os.Args[0], "-test.run=^TestOutOfDescriptors$", "-test.v", "-test.count=1")
			cmd.Env = append(os.Environ(), envNoFile+"="+room)
			out, err := cmd.CombinedOutput()
			if err != nil || !strings.Contains(string(out), "--- PASS: TestOutOfDescriptors") {
				t.Fatalf("child with room for %s descriptors: %v\n%s", room, err, out)
			}
			for line := range strings.Lines(string(out)) {
				if strings.Contains(line, "resources_test.go") {
					t.Log(strings.TrimSpace(line))
				}
			}
		}
		return
	}
	extra, err := strconv.Atoi(room)
	if err != nil {
		t.Fatal(err)
	}
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skip("no /proc/self/fd:", err)
	}
	var lim unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatal(err)
	}
	// Room for a few connections (ten descriptors a pair in one process)
	// beside what the process holds, the listener's and the readiness
	// set's.
	lim.Cur = uint64(len(fds) + extra)
	if err := unix.Setrlimit(unix.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatal(err)
	}
	p := shm.New(shm.Config{Namespace: "godirect-nd-shm-test-" + t.Name()})
	a, b := ndtest.OpenAdapters(t, p)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	l, err := b.Listen(0, ndtest.Protocol, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	remote := netip.AddrPortFrom(b.Address(), l.Port())
	type pair struct {
		act, pas   nd.Endpoint
		acq, pcq   nd.CompletionQueue
		abuf, pbuf []byte
		amr, pmr   nd.MemoryRegion
	}
	var pairs []pair
	var failure error
	for len(pairs) < 64 && failure == nil {
		var pr pair
		pr.acq, _ = a.CreateCompletionQueue(16)
		pr.pcq, _ = b.CreateCompletionQueue(16)
		ac, _ := a.CreateConnector()
		pr.act, err = ac.CreateEndpoint(pr.acq, pr.acq, ndtest.PeerLimits)
		if err != nil {
			t.Fatal(err)
		}
		pr.abuf, pr.pbuf = make([]byte, 64), make([]byte, 64)
		pr.amr, _ = a.RegisterMemory(ctx, pr.abuf)
		pr.pmr, _ = b.RegisterMemory(ctx, pr.pbuf)
		connected := make(chan error, 1)
		go func() {
			err := ac.Connect(ctx, pr.act, remote, ndtest.Protocol, 0, nil)
			if err == nil {
				err = ac.CompleteConnect(ctx)
			}
			connected <- err
		}()
		pc, _ := b.CreateConnector()
		requested := make(chan error, 1)
		go func() { requested <- l.GetConnectionRequest(ctx, pc) }()
		select {
		case failure = <-connected:
			if failure == nil {
				t.Fatal("Connect returned before the request was accepted")
			}
			continue
		case err := <-requested:
			if err != nil {
				t.Fatalf("GetConnectionRequest: %v", err)
			}
		}
		pr.pas, err = pc.CreateEndpoint(pr.pcq, pr.pcq, ndtest.PeerLimits)
		if err != nil {
			t.Fatal(err)
		}
		if err := pc.Accept(ctx, pr.pas, nil); err != nil {
			failure = err
			<-connected
			break
		}
		if failure = <-connected; failure == nil {
			pairs = append(pairs, pr)
		}
	}
	if failure == nil {
		t.Fatalf("%d connections made under a limit of %d descriptors", len(pairs), lim.Cur)
	}
	if !errors.Is(failure, nd.ErrInsufficientResources) || !strings.Contains(failure.Error(), "file descriptors") {
		t.Fatalf("connection %d failed with %v, want ND_INSUFFICIENT_RESOURCES naming file descriptors", len(pairs), failure)
	}
	if len(pairs) == 0 {
		t.Fatal("no connection was made")
	}
	t.Logf("connection %d of a process limited to %d descriptors: %v", len(pairs), lim.Cur, failure)
	// The established connections work on.
	for i, pr := range pairs {
		for _, dir := range [][2]nd.Endpoint{{pr.act, pr.pas}, {pr.pas, pr.act}} {
			var sr, rr nd.Result
			rbuf, rmr, rcq := pr.pbuf, pr.pmr, pr.pcq
			sbuf, smr, scq := pr.abuf, pr.amr, pr.acq
			if dir[0] == pr.pas {
				rbuf, rmr, rcq, sbuf, smr, scq = pr.abuf, pr.amr, pr.acq, pr.pbuf, pr.pmr, pr.pcq
			}
			if err := dir[1].Receive(&rr, []nd.SGE{{Buffer: rbuf, Region: rmr}}); err != nil {
				t.Fatalf("pair %d: Receive: %v", i, err)
			}
			for j := range sbuf {
				sbuf[j] = byte(i + j)
			}
			if err := dir[0].Send(&sr, []nd.SGE{{Buffer: sbuf, Region: smr}}, 0); err != nil {
				t.Fatalf("pair %d: Send: %v", i, err)
			}
			ndtest.Expect(t, scq, &sr, nd.Success, len(sbuf))
			ndtest.Expect(t, rcq, &rr, nd.Success, len(sbuf))
			if string(rbuf) != string(sbuf) {
				t.Fatalf("pair %d: the Send did not land", i)
			}
		}
	}
}
