package tcp_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/godirect/nd/ndtest"
	"github.com/godirect/nd/ndtest/remote"
	"github.com/godirect/nd/provider/tcp"
)

// TestConformanceTwoProcesses runs the suite with its second adapter in a
// child process: the child (this test binary, see TestMain) serves
// 127.0.0.2 with its own TCP provider, this process serves 127.0.0.1, and
// every connection of the suite crosses between the two processes over
// loopback TCP.
func TestConformanceTwoProcesses(t *testing.T) {
	local, remoteAddr := netip.MustParseAddr("127.0.0.1"), netip.MustParseAddr("127.0.0.2")
	client := startChild(t, remoteAddr)
	ndtest.Run(t, remote.Split(servingOnly(local), local, remoteAddr, client))
}

// TestConformanceNetns runs the suite between this process and a child in
// a network namespace of its own, joined to this one by a veth pair. It
// needs root and the ip command (iproute2). The test creates the namespace
// and the pair, with a /30 of a TEST-NET range (RFC 5737) chosen from the
// process id that exists only on the two ends of the pair, and removes
// both when it ends.
func TestConformanceNetns(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skipf("creating a network namespace and a veth pair needs root (euid %d)", os.Geteuid())
	}
	ip, err := exec.LookPath("ip")
	if err != nil {
		t.Skipf("the ip command (iproute2) is needed to create a network namespace and a veth pair: %v", err)
	}
	pid := os.Getpid()
	ns := fmt.Sprintf("ndtest%d", pid)
	hostIf, childIf := fmt.Sprintf("ndh%d", pid), fmt.Sprintf("ndc%d", pid)
	hostAddr, childAddr := netnsAddrs(pid)

	if out, err := exec.Command(ip, "netns", "add", ns).CombinedOutput(); err != nil {
		msg := fmt.Sprintf("ip netns add %s: %v: %s", ns, err, bytes.TrimSpace(out))
		if bytes.Contains(out, []byte("not permitted")) || bytes.Contains(out, []byte("ermission denied")) {
			t.Skip("this sandbox does not allow network namespaces: " + msg)
		}
		t.Fatal(msg)
	}
	t.Cleanup(func() {
		if out, err := exec.Command(ip, "netns", "del", ns).CombinedOutput(); err != nil {
			t.Errorf("ip netns del %s: %v: %s", ns, err, out)
		}
	})
	ipRun(t, ip, "link", "add", hostIf, "type", "veth", "peer", "name", childIf, "netns", ns)
	t.Cleanup(func() {
		// Deleting one end deletes the pair; the namespace's deletion
		// would also take it away, so a missing link is fine.
		exec.Command(ip, "link", "del", hostIf).Run()
	})
	ipRun(t, ip, "addr", "add", hostAddr.String()+"/30", "dev", hostIf)
	ipRun(t, ip, "link", "set", hostIf, "up")
	ipRun(t, ip, "-n", ns, "addr", "add", childAddr.String()+"/30", "dev", childIf)
	ipRun(t, ip, "-n", ns, "link", "set", childIf, "up")
	ipRun(t, ip, "-n", ns, "link", "set", "lo", "up")

	client := startChild(t, childAddr, ip, "netns", "exec", ns)
	ndtest.Run(t, remote.Split(servingOnly(hostAddr), hostAddr, childAddr, client))
}

// netnsAddrs picks a /30 of the TEST-NET ranges from pid, so that parallel
// runs (of other packages' tests, say) rarely collide, and returns its two
// host addresses. It avoids 192.0.2.248/30, which holds the address
// ndtest uses as one no provider serves.
func netnsAddrs(pid int) (host, child netip.Addr) {
	nets := [3][4]byte{{192, 0, 2, 0}, {198, 51, 100, 0}, {203, 0, 113, 0}}
	i := pid % (3*64 - 1)
	if i >= 62 {
		i++
	}
	b := nets[i/64]
	b[3] = byte(i % 64 * 4)
	b[3]++
	host = netip.AddrFrom4(b)
	b[3]++
	return host, netip.AddrFrom4(b)
}

func ipRun(t *testing.T, ip string, args ...string) {
	t.Helper()
	if out, err := exec.Command(ip, args...).CombinedOutput(); err != nil {
		t.Fatalf("ip %s: %v: %s", strings.Join(args, " "), err, bytes.TrimSpace(out))
	}
}

// servingOnly is a TCP provider that serves addr only.
func servingOnly(addr netip.Addr) *tcp.Provider {
	cfg := tcp.DefaultConfig()
	cfg.Addresses = []netip.Addr{addr}
	return tcp.New(cfg)
}

// startChild starts this test binary (under the command words of prefix,
// if any) as a child serving addr on its stdin and stdout, and returns the
// client of that session. When the test ends the client is closed and the
// child must exit cleanly: an exit status other than 0 (the race detector
// exits with 66 after a report) fails the test, with the child's stderr.
func startChild(t *testing.T, addr netip.Addr, prefix ...string) *remote.Client {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		exe = os.Args[0]
	}
	args := append(append([]string(nil), prefix...), exe)
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Env = append(os.Environ(), childEnv+"="+addr.String())
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr := new(childStderr)
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting the child %q: %v", args, err)
	}
	client := remote.NewClient(childPipes{stdout, stdin})
	t.Cleanup(func() {
		client.Close()
		waited := make(chan error, 1)
		go func() { waited <- cmd.Wait() }()
		var err error
		select {
		case err = <-waited:
		case <-time.After(time.Minute):
			cmd.Process.Kill()
			err = errors.Join(errors.New("the child did not exit within a minute of the end of the session; killed"), <-waited)
		}
		out := stderr.String()
		switch {
		case err != nil:
			t.Errorf("child %q: %v\nits stderr:\n%s", args, err, out)
		case strings.Contains(out, "DATA RACE"):
			t.Errorf("child %q reported a data race:\n%s", args, out)
		case out != "":
			t.Logf("child %q stderr:\n%s", args, out)
		}
	})
	return client
}

// childPipes joins the child's stdout and stdin into the client's connection.
type childPipes struct {
	io.ReadCloser
	w io.WriteCloser
}

func (p childPipes) Write(b []byte) (int, error) { return p.w.Write(b) }

func (p childPipes) Close() error { return errors.Join(p.w.Close(), p.ReadCloser.Close()) }

// childStderr collects the child's stderr, which exec copies on a
// goroutine of its own.
type childStderr struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *childStderr) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *childStderr) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
