package verify

import (
	"bytes"
	"context"
	"io"
	"net/netip"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/godirect/nd"
)

// syncBuffer is an io.Writer both sides of an in-process run may write.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// runVerify runs nd verify with args and returns its error and output.
func runVerify(t *testing.T, args ...string) (string, error) {
	t.Helper()
	out := &syncBuffer{}
	fs, run := Flags(out, io.Discard)
	fs.SetOutput(io.Discard)
	if err := fs.Parse(args); err != nil {
		t.Fatalf("flags %q: %v", args, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	err := run(ctx, fs.Args())
	return out.String(), err
}

// TestInProcess runs both sides in this process over loop and tcp, with
// and without CRC: every message of each size and kind is verified on
// both sides, and every request posted completed.
func TestInProcess(t *testing.T) {
	for _, args := range [][]string{
		{"-provider", "loop"},
		{"-provider", "tcp"},
		{"-provider", "tcp", "-crc"},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			out, err := runVerify(t, append(args, "-sizes", "1,7,4096,65537,1M", "-n", "5", "-depth", "3")...)
			if err != nil {
				t.Fatalf("nd verify: %v\n%s", err, out)
			}
			for _, want := range []string{
				"client: connection 1 verified 25 Sends, 25 Writes, 25 Reads of 5 sizes (1 to 1048576 bytes)",
				"server: connection 1 verified 25 Sends, 25 Writes, 25 Reads",
			} {
				if !strings.Contains(out, want) {
					t.Errorf("no line %q in\n%s", want, out)
				}
			}
			ends := regexp.MustCompile(`(client|server): connection 1 ended normally after [0-9.]+ s: posted (\d+), completed (\d+)`).FindAllStringSubmatch(out, -1)
			if len(ends) != 2 {
				t.Fatalf("%d sides ended normally, want 2:\n%s", len(ends), out)
			}
			for _, e := range ends {
				if e[2] != e[3] {
					t.Errorf("%s: posted %s, completed %s", e[1], e[2], e[3])
				}
			}
		})
	}
}

// TestCorruptionFound: a byte changed in one message of each kind, on its
// way, fails the run with the message's number and the byte's offset.
func TestCorruptionFound(t *testing.T) {
	for _, tt := range []struct {
		o    op
		want string
	}{
		{opSend, "the server found message 7 (100 bytes) wrong from byte 42 on"},
		{opWrite, "the server found message 7 (100 bytes) wrong from byte 42 on"},
		{opRead, "the Read of message 7 (100 bytes): wrong bytes from byte 42 on"},
	} {
		t.Run(tt.o.String(), func(t *testing.T) {
			installedSeam = flipByte{o: tt.o, seq: 7, at: 42}
			defer func() { installedSeam = nil }()
			ops := map[op]string{opSend: "send", opWrite: "write", opRead: "read"}[tt.o]
			out, err := runVerify(t, "-provider", "tcp", "-sizes", "100", "-n", "10", "-depth", "4", "-ops", ops)
			// Both sides report; the server may report first that the
			// client left.
			if err == nil || !strings.Contains(out, "ERROR after") || !strings.Contains(out, tt.want) {
				t.Fatalf("nd verify = %v, want an error reported as %q\n%s", err, tt.want, out)
			}
		})
	}
}

// TestPatternDistinct: a message differs from the same-sized message of
// another number, and from a message of another size with its number.
func TestPatternDistinct(t *testing.T) {
	a, b, c := make([]byte, 64), make([]byte, 64), make([]byte, 65)
	pattern(a, 5)
	pattern(b, 6)
	pattern(c, 5)
	scratch := make([]byte, 65)
	if mismatch(a, 6, scratch) < 0 {
		t.Error("message 5 passes as message 6")
	}
	if bytes.Equal(a, c[:64]) {
		t.Error("a message of 64 bytes is the start of one of 65 with its number")
	}
	if got := mismatch(a, 5, scratch); got != -1 {
		t.Errorf("message 5 checked against itself: mismatch at %d", got)
	}
	a[63] ^= 1
	if got := mismatch(a, 5, scratch); got != 63 {
		t.Errorf("a change at byte 63 found at %d", got)
	}
}

// TestLedger: a request completes once; a second completion, and one of a
// Result never posted, are errors.
func TestLedger(t *testing.T) {
	l := newLedger()
	r := &request{op: opSend}
	l.add(r)
	l.post(r)
	r.res.Status = nd.ErrIOTimeout
	if got, err := l.complete(&r.res); got != r || err != nil {
		t.Fatalf("first completion: %v, %v", got, err)
	}
	if l.outstanding != 0 || l.telling != nd.ErrIOTimeout || l.failedOp != opSend {
		t.Errorf("after the completion: %d outstanding, telling %v, failed op %v", l.outstanding, l.telling, l.failedOp)
	}
	if _, err := l.complete(&r.res); err == nil || !strings.Contains(err.Error(), "a second completion of a Send") {
		t.Errorf("second completion: %v", err)
	}
	var stray nd.Result
	if _, err := l.complete(&stray); err == nil {
		t.Error("a completion of a Result never posted was taken")
	}
	if l.bad == nil {
		t.Error("the ledger does not remember the bad completion")
	}
	if got := l.summary(); got != "Send ND_IO_TIMEOUT 1" {
		t.Errorf("summary %q", got)
	}
}

// TestPeerGone: the server's adapter closes in the middle of the run; the
// client reports the failure with the statuses its requests completed
// with, and with -fail-ok that is no error.
func TestPeerGone(t *testing.T) {
	installedSeam = nil
	out := &syncBuffer{}
	c := configOf(t, out, "-provider", "tcp", "-sizes", "64K", "-D", "1m", "-fail-ok")
	p, addrs, err := c.provider.Open()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	sa, err := p.OpenAdapter(addrs[0])
	if err != nil {
		t.Fatal(err)
	}
	l, err := sa.Listen(0, 6, 0)
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- c.Serve(ctx, sa, l, io.Discard) }()
	ca, err := p.OpenAdapter(addrs[0])
	if err != nil {
		t.Fatal(err)
	}
	defer ca.Close()
	driven := make(chan error, 1)
	go func() { driven <- c.Drive(ctx, ca, netipOf(sa, l), io.Discard) }()
	// Close the server's side once traffic flows.
	for !strings.Contains(out.String(), "server: connection 1 up") {
		select {
		case <-time.After(10 * time.Millisecond):
		case <-ctx.Done():
			t.Fatal("the connection did not come up")
		}
	}
	sa.Close()
	if err := <-driven; err != nil {
		t.Fatalf("client with -fail-ok: %v\n%s", err, out)
	}
	<-served
	re := regexp.MustCompile(`client: connection 1 FAILED at=[0-9.]+ \([0-9.]+ s after it was up\): learned as .*; status=(ND_CANCELED|ND_IO_TIMEOUT); NotifyDisconnect returned at=[0-9.]+; posted (\d+), completed (\d+)`)
	m := re.FindStringSubmatch(out.String())
	if m == nil {
		t.Fatalf("no failure report of the client:\n%s", out)
	}
	if m[2] != m[3] {
		t.Errorf("posted %s, completed %s", m[2], m[3])
	}
}

// configOf parses args into a config, as nd verify's command line.
func configOf(t *testing.T, out io.Writer, args ...string) *config {
	t.Helper()
	fs, c, ops := newFlagSet(out)
	fs.SetOutput(io.Discard)
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	if err := c.parsed(fs, *ops, fs.Args()); err != nil {
		t.Fatal(err)
	}
	return c
}

// netipOf is the address of l, a listener of a.
func netipOf(a nd.Adapter, l nd.Listener) netip.AddrPort {
	return netip.AddrPortFrom(a.Address(), l.Port())
}

// TestSmallerAfterLarger runs the sizes largest first: a Write of fewer
// bytes into a slot that a larger Read's bytes filled before must find the
// guard after its bytes (the server puts it back once the client's Reads
// completed), or the run reports a mismatch at the message's end.
func TestSmallerAfterLarger(t *testing.T) {
	out, err := runVerify(t, "-provider", "loop", "-sizes", "65536,1000,1", "-n", "3", "-depth", "2")
	if err != nil {
		t.Fatalf("nd verify: %v\n%s", err, out)
	}
	if want := "client: connection 1 verified 9 Sends, 9 Writes, 9 Reads"; !strings.Contains(out, want) {
		t.Errorf("no line %q in\n%s", want, out)
	}
}

// flipByte is a messageSeam that flips a bit of byte at of message seq of
// kind o.
type flipByte struct {
	o   op
	seq uint64
	at  int
}

func (f flipByte) alter(o op, seq uint64, b []byte) {
	if o == f.o && seq == f.seq {
		b[f.at] ^= 0x10
	}
}
