//go:build linux || windows || darwin || freebsd

package shm_test

import (
	"fmt"
	"io"
	"net/netip"
	"os"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"github.com/godirect/nd/ndtest/remote"
	"github.com/godirect/nd/provider/shm"
)

// The two-process tests re-execute the test binary as a child that serves
// one adapter of the provider through ndtest/remote over its stdin and
// stdout; the parent drives the suite through remote.Split.
const (
	envChild      = "GODIRECT_SHM_CHILD"                  // the namespace: run as the child
	envChildRng   = "GODIRECT_SHM_CHILD_RING"             // "1": OneSidedRing
	envChildSendT = "GODIRECT_SHM_CHILD_SEND_THRESHOLD"   // Config.SendThreshold
	envChildNoPVM = "GODIRECT_SHM_CHILD_NO_PVM"           // "1": every probe of the peer fails
	envChildRespT = "GODIRECT_SHM_CHILD_RESPONSE_TIMEOUT" // Config.ResponseTimeout
)

var (
	parentAddr = netip.MustParseAddr("127.0.0.1")
	childAddr  = netip.MustParseAddr("127.0.0.2")
)

func TestMain(m *testing.M) {
	if ns := os.Getenv(envChild); ns != "" {
		os.Exit(serveChild(ns))
	}
	os.Exit(m.Run())
}

type stdio struct {
	io.Reader
	io.Writer
}

func (stdio) Close() error {
	os.Stdin.Close()
	return os.Stdout.Close()
}

func serveChild(ns string) int {
	cfg := shm.Config{Namespace: ns, Addresses: []netip.Addr{childAddr}}
	if os.Getenv(envChildRng) == "1" {
		cfg.OneSided = shm.OneSidedRing
	}
	if v := os.Getenv(envChildSendT); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			fmt.Fprintln(os.Stderr, "child:", err)
			return 1
		}
		cfg.SendThreshold = n
	}
	if v := os.Getenv(envChildRespT); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			fmt.Fprintln(os.Stderr, "child:", err)
			return 1
		}
		cfg.ResponseTimeout = d
	}
	if os.Getenv(envChildNoPVM) == "1" {
		shm.SetProbeOff(true)
	}
	if err := remote.Serve(stdio{os.Stdin, os.Stdout}, shm.New(cfg)); err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		return 1
	}
	return 0
}

type pipes struct {
	io.ReadCloser
	w io.WriteCloser
}

func (p pipes) Write(b []byte) (int, error) { return p.w.Write(b) }
func (p pipes) Close() error {
	p.w.Close()
	return p.ReadCloser.Close()
}

// child is a started child process and the split provider over it.
type child struct {
	cmd    *exec.Cmd
	client *remote.Client
	local  *shm.Provider // parentAddr's
	p      *remote.SplitProvider
	exited chan struct{}
}

// startChild starts the child in namespace ns and returns the split
// provider: parentAddr is served here, childAddr by the child, both with
// cfg (its OneSided and SendThreshold). noPVM makes the child's probes of
// its peers fail. The child ends with the test.
func startChild(t testing.TB, ns string, cfg shm.Config, noPVM ...bool) *child {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), envChild+"="+ns)
	if cfg.OneSided == shm.OneSidedRing {
		cmd.Env = append(cmd.Env, envChildRng+"=1")
	}
	if cfg.SendThreshold != 0 {
		cmd.Env = append(cmd.Env, envChildSendT+"="+strconv.Itoa(cfg.SendThreshold))
	}
	if cfg.ResponseTimeout != 0 {
		cmd.Env = append(cmd.Env, envChildRespT+"="+cfg.ResponseTimeout.String())
	}
	if len(noPVM) > 0 && noPVM[0] {
		cmd.Env = append(cmd.Env, envChildNoPVM+"=1")
	}
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c := &child{cmd: cmd, exited: make(chan struct{})}
	go func() {
		cmd.Wait()
		close(c.exited)
	}()
	c.client = remote.NewClient(pipes{out, in})
	cfg.Namespace, cfg.Addresses = ns, []netip.Addr{parentAddr}
	c.local = shm.New(cfg)
	c.p = remote.Split(c.local, parentAddr, childAddr, c.client)
	t.Cleanup(func() {
		c.client.Close()
		select {
		case <-c.exited:
		case <-time.After(30 * time.Second):
			cmd.Process.Kill()
			<-c.exited
			t.Error("the child did not exit")
		}
	})
	return c
}

// TestConformanceTwoProcesses runs the suite unchanged with its passive
// adapters in a child process: every connection crosses the process
// boundary through the Unix socket, the shared segment and process_vm_*.
func TestConformanceTwoProcesses(t *testing.T) {
	c := startChild(t, "godirect-nd-shm-test-"+t.Name(), shm.Config{})
	ndtestRun(t, c.p)
}

// TestConformanceTwoProcessesRendezvous is the two-process suite with
// every Send that carries a byte sent by rendezvous (SendThreshold 1, both
// sides): the receiving process pulls the payload from the sender's
// memory. Its case RendezvousCounted checks that this process did both.
func TestConformanceTwoProcessesRendezvous(t *testing.T) {
	cfg := shm.Config{SendThreshold: 1, ResponseTimeout: rendezvousResponseTimeout}
	c := startChild(t, "godirect-nd-shm-test-"+t.Name(), cfg)
	ndtestRun(t, c.p)
	t.Run("RendezvousCounted", func(t *testing.T) { rendezvousCounted(t, c.p, c.local) })
}

// TestConformanceTwoProcessesNoPVM is the two-process suite where neither
// process may read the other's memory (both probes fail): Sends of any
// size and Reads and Writes go through the rings.
func TestConformanceTwoProcessesNoPVM(t *testing.T) {
	shm.SetProbeOff(true)
	t.Cleanup(func() { shm.SetProbeOff(false) })
	cfg := shm.Config{SendThreshold: 1}
	c := startChild(t, "godirect-nd-shm-test-"+t.Name(), cfg, true)
	ndtestRun(t, c.p)
	if sent, pulled := shm.RendezvousCounts(c.local); sent != 0 || pulled != 0 {
		t.Errorf("this process sent %d Sends by rendezvous and pulled %d without the probe, want 0", sent, pulled)
	}
}

// TestConformanceTwoProcessesRing is the two-process suite with Reads and
// Writes through the rings.
func TestConformanceTwoProcessesRing(t *testing.T) {
	c := startChild(t, "godirect-nd-shm-test-"+t.Name(), shm.Config{OneSided: shm.OneSidedRing})
	ndtestRun(t, c.p)
}
