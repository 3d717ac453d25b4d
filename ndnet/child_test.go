package ndnet_test

import (
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/godirect/nd/ndnet"
	"github.com/godirect/nd/ndtest"
)

// childEnv names the provider and address a child process dials.
const childEnv = "NDNET_TEST_CHILD"

// TestChildProcess is the child's side of the cross-process tests: it
// dials, writes 1000 bytes and waits on standard input until killed.
func TestChildProcess(t *testing.T) {
	spec := os.Getenv(childEnv)
	if spec == "" {
		t.Skip("run by the cross-process tests")
	}
	name, addr, _ := strings.Cut(spec, ",")
	for _, pr := range providers {
		if pr.name != name {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		c, err := ndnet.Dial(ctx, pr.p(), addr)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Write(make([]byte, 1000)); err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, os.Stdin)
	}
}

// childPeer starts this test binary as a child process (TestChildProcess)
// that dials l over the provider called name, accepts its connection and
// reads the 1000 bytes the child writes. The child waits on standard input
// until killed; cleanup kills it and waits for it.
func childPeer(t *testing.T, name string, l *ndnet.Listener) (*ndnet.Conn, *exec.Cmd) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestChildProcess$")
	cmd.Env = append(os.Environ(), childEnv+"="+name+","+l.Addr().String())
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		stdin.Close()
		cmd.Wait()
	})
	nc, err := l.Accept()
	if err != nil {
		t.Fatal(err)
	}
	c := nc.(*ndnet.Conn)
	c.SetReadDeadline(time.Now().Add(20 * time.Second))
	if _, err := io.ReadFull(c, make([]byte, 1000)); err != nil {
		c.Close()
		t.Fatal(err)
	}
	return c, cmd
}

// TestPeerDies: a peer process killed mid-stream gives Read an error,
// ErrConnReset, not io.EOF and not a hang.
func TestPeerDies(t *testing.T) {
	for _, pr := range providers {
		if pr.name == "loop" {
			continue // in-process only
		}
		t.Run(pr.name, func(t *testing.T) {
			l, err := ndnet.Listen(pr.p(), pr.addr)
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			c, cmd := childPeer(t, pr.name, l)
			defer c.Close()
			cmd.Process.Kill()
			cmd.Wait() // the child has ended: its sockets are closed
			if ndtest.UnderWine() {
				// Measured with Wine 8 under load, about one run in 30:
				// the wineserver keeps the killed child's socket open (ss
				// shows it held by wineserver64 after the process ended),
				// so nothing reaches this side. Windows closes a dead
				// process's sockets.
				c.SetReadDeadline(time.Now().Add(5 * time.Second))
			}
			n, err := c.Read(make([]byte, 10))
			if ndtest.UnderWine() && n == 0 && errors.Is(err, os.ErrDeadlineExceeded) {
				t.Skip("Wine kept the killed child's socket open: no end reached this side")
			}
			if n != 0 || !errors.Is(err, ndnet.ErrConnReset) {
				t.Fatalf("Read after the peer died = %d, %v; want 0, ErrConnReset", n, err)
			}
		})
	}
}
