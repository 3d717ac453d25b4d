package tcp_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/godirect/nd"
	"github.com/godirect/nd/ndtest"
	"github.com/godirect/nd/provider/tcp"
)

// partitionNet is a network namespace of the test's own joined to the
// test's namespace by a veth pair, and a partition of the pair: a
// blackhole route toward the other end on each side, which drops every
// packet silently, as a broken path does.
type partitionNet struct {
	ip          string
	ns          string
	host, child netip.Addr // the addresses of the pair's ends
	cut         bool
}

// newPartitionNet makes the namespace and the pair, or skips the test
// where that is not possible (not root, no iproute2, a sandbox); it
// removes both when the test ends.
func newPartitionNet(t *testing.T) *partitionNet {
	if os.Geteuid() != 0 {
		t.Skipf("a network namespace and a veth pair need root (euid %d)", os.Geteuid())
	}
	ip, err := exec.LookPath("ip")
	if err != nil {
		t.Skipf("the ip command (iproute2) makes the namespace and the pair: %v", err)
	}
	pid := os.Getpid()
	n := &partitionNet{ip: ip, ns: fmt.Sprintf("ndpart%d", pid)}
	n.host, n.child = netnsAddrs(pid)
	hostIf, childIf := fmt.Sprintf("ndph%d", pid), fmt.Sprintf("ndpc%d", pid)
	if out, err := exec.Command(ip, "netns", "add", n.ns).CombinedOutput(); err != nil {
		msg := fmt.Sprintf("ip netns add %s: %v: %s", n.ns, err, bytes.TrimSpace(out))
		if bytes.Contains(out, []byte("not permitted")) || bytes.Contains(out, []byte("ermission denied")) {
			t.Skip("this sandbox does not allow network namespaces: " + msg)
		}
		t.Fatal(msg)
	}
	t.Cleanup(func() {
		n.heal(t)
		exec.Command(ip, "link", "del", hostIf).Run()
		if out, err := exec.Command(ip, "netns", "del", n.ns).CombinedOutput(); err != nil {
			t.Errorf("ip netns del %s: %v: %s", n.ns, err, out)
		}
	})
	ipRun(t, ip, "link", "add", hostIf, "type", "veth", "peer", "name", childIf, "netns", n.ns)
	ipRun(t, ip, "addr", "add", n.host.String()+"/30", "dev", hostIf)
	ipRun(t, ip, "link", "set", hostIf, "up")
	ipRun(t, ip, "-n", n.ns, "addr", "add", n.child.String()+"/30", "dev", childIf)
	ipRun(t, ip, "-n", n.ns, "link", "set", childIf, "up")
	ipRun(t, ip, "-n", n.ns, "link", "set", "lo", "up")
	return n
}

// partition drops every packet between the two ends from now on.
func (n *partitionNet) partition(t *testing.T) {
	t.Helper()
	ipRun(t, n.ip, "route", "add", "blackhole", n.child.String()+"/32")
	ipRun(t, n.ip, "-n", n.ns, "route", "add", "blackhole", n.host.String()+"/32")
	n.cut = true
}

// heal ends the partition.
func (n *partitionNet) heal(t *testing.T) {
	t.Helper()
	if !n.cut {
		return
	}
	ipRun(t, n.ip, "route", "del", "blackhole", n.child.String()+"/32")
	ipRun(t, n.ip, "-n", n.ns, "route", "del", "blackhole", n.host.String()+"/32")
	n.cut = false
}

// inChild runs f on an operating system thread that joined the child's
// network namespace: the sockets f makes (a listener, and so the
// connections it accepts) belong to it for their lifetime. The thread is
// not reused: it ends with f's goroutine.
func (n *partitionNet) inChild(t *testing.T, f func() error) {
	t.Helper()
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
		fd, err := unix.Open("/run/netns/"+n.ns, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			errc <- err
			return
		}
		defer unix.Close(fd)
		if err := unix.Setns(fd, unix.CLONE_NEWNET); err != nil {
			errc <- fmt.Errorf("setns %s: %w", n.ns, err)
			return
		}
		errc <- f()
	}()
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
}

// partitionEnd is one side of a connection of the partition tests: its
// queue, connector, endpoint and a registered buffer.
type partitionEnd struct {
	cq   nd.CompletionQueue
	conn nd.Connector
	ep   nd.Endpoint
	mr   nd.MemoryRegion
	a    nd.Adapter
	buf  []byte
	recv nd.Result
	send nd.Result
}

func newPartitionEnd(t *testing.T, a nd.Adapter) *partitionEnd {
	t.Helper()
	e := &partitionEnd{a: a, buf: make([]byte, 256<<10)}
	var err error
	if e.cq, err = a.CreateCompletionQueue(64); err != nil {
		t.Fatal(err)
	}
	if e.conn, err = a.CreateConnector(); err != nil {
		t.Fatal(err)
	}
	if e.ep, err = e.conn.CreateEndpoint(e.cq, e.cq, ndtest.DefaultLimits); err != nil {
		t.Fatal(err)
	}
	if e.mr, err = a.RegisterMemory(context.Background(), e.buf); err != nil {
		t.Fatal(err)
	}
	return e
}

// receive posts a Receive of the buffer's first half.
func (e *partitionEnd) receive(t *testing.T) {
	t.Helper()
	if err := e.ep.Receive(&e.recv, []nd.SGE{{Buffer: e.buf[:128<<10], Region: e.mr}}); err != nil {
		t.Fatal(err)
	}
}

// sendBytes posts a Send of n bytes from the buffer's second half.
func (e *partitionEnd) sendBytes(t *testing.T, n int) {
	t.Helper()
	if err := e.ep.Send(&e.send, []nd.SGE{{Buffer: e.buf[128<<10 : 128<<10+n], Region: e.mr}}, 0); err != nil {
		t.Fatal(err)
	}
}

// close releases everything the end made, in ND's order.
func (e *partitionEnd) close() {
	e.ep.Close()
	e.conn.Close()
	e.a.DeregisterMemory(context.Background(), e.mr)
	e.cq.Close()
}

// connectAcross connects an end on active to the listener l of passive
// (in the child's namespace); both have a Receive posted.
func connectAcross(t *testing.T, active, passive nd.Adapter, l nd.Listener) (a, p *partitionEnd) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	a, p = newPartitionEnd(t, active), newPartitionEnd(t, passive)
	a.receive(t)
	p.receive(t)
	accepted := make(chan error, 1)
	go func() {
		if err := l.GetConnectionRequest(ctx, p.conn); err != nil {
			accepted <- err
			return
		}
		accepted <- p.conn.Accept(ctx, p.ep, nil)
	}()
	err := a.conn.Connect(ctx, a.ep, netip.AddrPortFrom(passive.Address(), l.Port()), 6, 0, nil)
	if err == nil {
		err = a.conn.CompleteConnect(ctx)
	}
	if err := errors.Join(err, <-accepted); err != nil {
		t.Fatalf("connecting across the pair: %v", err)
	}
	return a, p
}

// expectCompletions waits until deadline for e's next completions, one
// for each request of want, in any order (a Receive and a Send complete
// on the queue in the order their flushes happen), and checks each one's
// status.
func expectCompletions(t *testing.T, who string, e *partitionEnd, deadline time.Time, want map[*nd.Result]nd.Status) {
	t.Helper()
	for range len(want) {
		got := waitResult(e.cq, deadline)
		if got == nil {
			t.Fatalf("%s: %d completions missing at the deadline", who, len(want))
		}
		st, ok := want[got]
		switch {
		case !ok:
			t.Fatalf("%s: a completion (status %v) of no request waited for, or a second one", who, got.Status)
		case got.Status != st:
			t.Fatalf("%s: completion status %v, want %v", who, got.Status, st)
		}
		delete(want, got)
	}
}

// checkNoLeak fails the test unless, within 5 s, the provider goroutines
// and the process's sockets are back to what they were before the
// connection (the listener's, and the process's others).
func checkNoLeak(t *testing.T, goroutines, socks int) {
	t.Helper()
	checkNoProviderLeak(t, goroutines, 5*time.Second)
	if !within(5*time.Second, func() bool { return sockets(t) <= socks }) {
		s := sockets(t)
		t.Errorf("%d sockets open after the connection ended, %d before it", s, socks)
	}
}

// within polls cond every 10 ms until it holds or d passed, and reports
// whether it held.
func within(d time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(d)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		<-tick.C
	}
	return true
}

// sockets counts the process's socket descriptors.
func sockets(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range ents {
		if l, err := os.Readlink("/proc/self/fd/" + e.Name()); err == nil && strings.HasPrefix(l, "socket:") {
			n++
		}
	}
	return n
}

// TestPartition breaks the path of a connection between two network
// namespaces while one side has a Send on the wire and the other waits
// for a Receive. The Send's bytes stay unacknowledged, which TCP
// keepalive never probes: Config.UserTimeout ends that side, keepalive the
// idle one, both within UserTimeout and one keepalive interval of the
// break. The Send completes ND_IO_TIMEOUT, the Receives ND_CANCELED, both
// NotifyDisconnect return, nothing of the connection stays behind, and
// once the path is back a new connection carries data. With the bound
// turned off (the system's limit, some 15 minutes) the sending side is
// still waiting when the idle one has ended.
func TestPartition(t *testing.T) {
	n := newPartitionNet(t)
	for _, tt := range []struct {
		name    string
		bounded bool
	}{{"bounded", true}, {"system-limit", false}} {
		t.Run(tt.name, func(t *testing.T) {
			cfg := tcp.DefaultConfig()
			// Whole seconds: Linux takes keepalive times in seconds.
			cfg.KeepAlive, cfg.KeepAliveInterval, cfg.KeepAliveCount = time.Second, time.Second, 1
			cfg.ResponseTimeout = 10 * time.Minute // not the watchdog's business
			if !tt.bounded {
				cfg.UserTimeout = -1
			}
			bound := 2*time.Second + cfg.KeepAliveInterval // UserTimeout, or keepalive's 2 s, and an interval
			cfg.Addresses = []netip.Addr{n.host}
			hostP := tcp.New(cfg)
			cfg.Addresses = []netip.Addr{n.child}
			childP := tcp.New(cfg)
			ha, err := hostP.OpenAdapter(n.host)
			if err != nil {
				t.Fatal(err)
			}
			defer ha.Close()
			ca, err := childP.OpenAdapter(n.child)
			if err != nil {
				t.Fatal(err)
			}
			defer ca.Close()
			var l nd.Listener
			n.inChild(t, func() (err error) {
				l, err = ca.Listen(0, 6, 0)
				return err
			})
			defer l.Close()
			baseGoroutines, baseSockets := len(providerGoroutines()), sockets(t)

			a, p := connectAcross(t, ha, ca, l)
			a.sendBytes(t, 1000)
			expectCompletions(t, "passive", p, time.Now().Add(5*time.Second), map[*nd.Result]nd.Status{&p.recv: nd.Success})
			expectCompletions(t, "active", a, time.Now().Add(5*time.Second), map[*nd.Result]nd.Status{&a.send: nd.Success})
			p.receive(t)
			// Both sides' last bytes (the confirmation's) are
			// acknowledged before the break: the passive side is idle.
			if !within(5*time.Second, func() bool { return tcp.Unacknowledged(hostP) == 0 && tcp.Unacknowledged(childP) == 0 }) {
				t.Fatalf("bytes still unacknowledged after 5 s: %d (active), %d (passive)", tcp.Unacknowledged(hostP), tcp.Unacknowledged(childP))
			}

			n.partition(t)
			defer n.heal(t)
			start := time.Now()
			a.sendBytes(t, 64<<10)
			expectCompletions(t, "passive (idle, a Receive posted)", p, start.Add(bound+time.Second),
				map[*nd.Result]nd.Status{&p.recv: nd.ErrCanceled})
			ended := time.Since(start)
			if err := p.conn.NotifyDisconnect(context.Background()); err != nil {
				t.Fatalf("passive NotifyDisconnect: %v", err)
			}
			t.Logf("the passive side ended %v after the break", ended.Round(time.Millisecond))
			if ended > bound {
				t.Errorf("the idle side ended %v after the break, more than %v", ended, bound)
			}
			if tt.bounded {
				expectCompletions(t, "active (a Send unacknowledged)", a, start.Add(bound+time.Second),
					map[*nd.Result]nd.Status{&a.send: nd.ErrIOTimeout, &a.recv: nd.ErrCanceled})
				ended = time.Since(start)
				t.Logf("the active side ended %v after the break", ended.Round(time.Millisecond))
				if ended > bound {
					t.Errorf("the sending side ended %v after the break, more than %v", ended, bound)
				}
			} else {
				// The sender retransmits on: the bound was what ended it.
				if got := waitResult(a.cq, start.Add(bound+time.Second)); got != nil {
					t.Fatalf("active: a completion (status %v) although unacknowledged data is unbounded", got.Status)
				}
				n.heal(t)
				// The healed path carries a retransmission to a peer
				// that forgot the connection, whose reset ends it.
				expectCompletions(t, "active, after the heal", a, time.Now().Add(30*time.Second),
					map[*nd.Result]nd.Status{&a.send: nd.ErrCanceled, &a.recv: nd.ErrCanceled})
			}
			if err := a.conn.NotifyDisconnect(context.Background()); err != nil {
				t.Fatalf("active NotifyDisconnect: %v", err)
			}
			a.close()
			p.close()
			checkNoLeak(t, baseGoroutines, baseSockets)

			n.heal(t)
			a, p = connectAcross(t, ha, ca, l)
			a.sendBytes(t, 64<<10)
			expectCompletions(t, "passive, new connection", p, time.Now().Add(10*time.Second), map[*nd.Result]nd.Status{&p.recv: nd.Success})
			expectCompletions(t, "active, new connection", a, time.Now().Add(10*time.Second), map[*nd.Result]nd.Status{&a.send: nd.Success})
			a.close()
			p.close()
			checkNoLeak(t, baseGoroutines, baseSockets)
		})
	}
}
