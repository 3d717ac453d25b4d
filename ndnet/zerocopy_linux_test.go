package ndnet_test

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/godirect/nd/ndnet"
	"github.com/godirect/nd/provider/shm"
)

// stoppedPeer returns a connection over shm to a child process that wrote
// 1000 bytes, was read, and then stopped running (SIGSTOP), with a frame
// sent to it that it cannot acknowledge: an RDMA Write posted next waits
// for the peer's side to pull it from the caller's buffer.
func stoppedPeer(t *testing.T) *ndnet.Conn {
	lc := ndnet.ListenConfig{Config: ndnet.Config{Linger: 100 * time.Millisecond}}
	l, err := lc.Listen(shm.New(shm.DefaultConfig()), "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	c, cmd := childPeer(t, "shm", l)
	if err := cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	// The signal is delivered when the child next runs: wait until the
	// kernel reports it stopped.
	stat := fmt.Sprintf("/proc/%d/stat", cmd.Process.Pid)
	deadline := time.Now().Add(20 * time.Second)
	for {
		b, err := os.ReadFile(stat)
		if err != nil {
			t.Fatal(err)
		}
		// The state follows the command's closing parenthesis.
		if i := bytes.LastIndexByte(b, ')'); i >= 0 && i+2 < len(b) && b[i+2] == 'T' {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the child did not stop")
		}
		runtime.Gosched()
	}
	if _, err := c.Write(make([]byte, 100)); err != nil {
		t.Fatal(err)
	}
	return c
}

// within fails the test unless ch delivers within 20 seconds.
func within[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(20 * time.Second):
		t.Fatalf("%s: no return in 20s", what)
		panic("unreachable")
	}
}

// TestLargeWriteToStoppedPeer: a Write whose RDMA Writes from the caller's
// buffer wait for a peer process that stopped running returns an error
// wrapping ErrConnReset once its deadline passes, or once Close tears the
// connection down after its linger, instead of waiting for the peer; Close
// returns too.
func TestLargeWriteToStoppedPeer(t *testing.T) {
	t.Run("deadline", func(t *testing.T) {
		c := stoppedPeer(t)
		const deadline = 200 * time.Millisecond
		c.SetWriteDeadline(time.Now().Add(deadline))
		start := time.Now()
		done := make(chan error, 1)
		go func() {
			_, err := c.Write(make([]byte, 256<<10))
			done <- err
		}()
		err := within(t, done, "Write to a stopped peer")
		if took := time.Since(start); !errors.Is(err, ndnet.ErrConnReset) || took < deadline {
			t.Fatalf("Write to a stopped peer = %v after %v; want ErrConnReset after its deadline (%v)", err, took, deadline)
		}
		closed := make(chan error, 1)
		go func() { closed <- c.Close() }()
		within(t, closed, "Close")
	})
	t.Run("close", func(t *testing.T) {
		c := stoppedPeer(t)
		done := make(chan error, 1)
		go func() {
			_, err := c.Write(make([]byte, 256<<10))
			done <- err
		}()
		// Close once the Write waits for its RDMA Writes.
		deadline := time.Now().Add(20 * time.Second)
		for ndnet.SourceWritesDone(c) {
			select {
			case err := <-done:
				t.Fatalf("the Write to a stopped peer returned (%v) before Close", err)
			default:
			}
			if time.Now().After(deadline) {
				t.Fatal("the Write posted no RDMA Write from its buffer")
			}
			runtime.Gosched()
		}
		closed := make(chan error, 1)
		go func() { closed <- c.Close() }()
		// The Write ends with net.ErrClosed if it sees Close before it
		// waits, with ErrConnReset if the teardown ends its wait.
		if err := within(t, done, "Write to a stopped peer, then Close"); !errors.Is(err, ndnet.ErrConnReset) && !errors.Is(err, net.ErrClosed) {
			t.Fatalf("Write to a stopped peer, then Close = %v; want ErrConnReset or net.ErrClosed", err)
		}
		within(t, closed, "Close")
	})
}
