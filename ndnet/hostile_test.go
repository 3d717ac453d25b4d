package ndnet

import (
	"context"
	"errors"
	"io"
	"net/netip"
	"runtime"
	"testing"
	"time"

	"github.com/godirect/nd"
	"github.com/godirect/nd/provider/loop"
)

// rawPeer is a hand-driven ND endpoint that speaks ndnet's set-up to a
// Listener and then sends whatever frames a test forges.
type rawPeer struct {
	t         *testing.T
	ctx       context.Context
	l         *Listener
	connector nd.Connector
	cq        nd.CompletionQueue
	ep        nd.Endpoint
	mr        nd.MemoryRegion
	buf       []byte
	recv      [4]nd.Result
	window    nd.MWDescriptor // the listener side's ring
	next      int             // offset in buf of the next forged frame
	conn      *Conn           // the accepted side
}

// dialRaw listens with cfg on a loop provider and connects a raw endpoint
// to it: the connection is up, the raw side has sent nothing yet, and the
// listener's side waits for its hello before Accept returns it.
func dialRaw(t *testing.T, cfg Config) *rawPeer {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	p := loop.New()
	lc := ListenConfig{Config: cfg}
	l, err := lc.Listen(p, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	a, err := p.OpenAdapter(netip.MustParseAddr("127.0.0.2"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	r := &rawPeer{t: t, ctx: ctx, l: l}
	r.cq, _ = a.CreateCompletionQueue(64)
	r.connector, _ = a.CreateConnector()
	r.ep, err = r.connector.CreateEndpoint(r.cq, r.cq, nd.EndpointLimits{InboundEntries: 4, OutboundEntries: 16, InboundSGE: 1, OutboundSGE: 1})
	if err != nil {
		t.Fatal(err)
	}
	r.buf = make([]byte, 1<<16)
	if r.mr, err = a.RegisterMemory(ctx, r.buf); err != nil {
		t.Fatal(err)
	}
	for i := range r.recv {
		r.ep.Receive(&r.recv[i], []nd.SGE{{Buffer: r.buf[i*4096 : (i+1)*4096], Region: r.mr}})
	}
	priv := make([]byte, SetupSize)
	putSetup(priv, setup{Version: Version, Depth: 2, FrameSize: 4096, RingSize: 4096})
	if err := r.connector.Connect(ctx, r.ep, l.Addr().(Addr).AddrPort, Protocol, 0, priv); err != nil {
		t.Fatal(err)
	}
	if err := r.connector.CompleteConnect(ctx); err != nil {
		t.Fatal(err)
	}
	return r
}

// newRawPeer is dialRaw, then the hellos: the raw side's (a 4 KiB ring's
// window, which it never exposes), Accept, and the accepted side's answer.
func newRawPeer(t *testing.T, cfg Config) *rawPeer {
	r := dialRaw(t, cfg)
	res := r.post(header{Type: frameHello}, ringDesc())
	c, err := r.l.Accept()
	if err != nil {
		t.Fatal(err)
	}
	r.conn = c.(*Conn)
	t.Cleanup(func() { r.conn.Close() })
	// The Send's completion and the accepted side's hello, in either order.
	var got *nd.Result
	for sent := false; !sent || got == nil; {
		switch d := r.wait(); {
		case d == res:
			sent = true
		case d == &r.recv[0] && d.Status == nd.Success:
			got = d
		default:
			t.Fatalf("completion %+v while exchanging hellos", d)
		}
	}
	h, payload, err := parseFrame(r.buf[:got.BytesTransferred])
	if err != nil || h.Type != frameHello {
		t.Fatalf("first frame %+v, %v; want hello", h, err)
	}
	r.window.UnmarshalBinary(payload)
	return r
}

// wait returns the next completion.
func (r *rawPeer) wait() *nd.Result {
	var done [1]*nd.Result
	for r.cq.GetResults(done[:]) == 0 {
		if err := r.cq.Notify(r.ctx, nd.NotifyAny); err != nil {
			r.t.Fatalf("Notify: %v", err)
		}
	}
	return done[0]
}

// send sends a frame of the given header and payload, each from its own
// part of the buffer, and waits for its completion.
func (r *rawPeer) send(h header, payload []byte) {
	res := r.post(h, payload)
	for r.wait() != res {
	}
}

// post posts send's frame and returns its request.
func (r *rawPeer) post(h header, payload []byte) *nd.Result {
	b := r.buf[32768+r.next : 32768+r.next+1024]
	r.next += 1024
	if h.Type == frameHello {
		h.Length = uint32(len(payload))
	}
	putHeader(b, h)
	n := HeaderSize + copy(b[HeaderSize:], payload)
	res := new(nd.Result)
	if err := r.ep.Send(res, []nd.SGE{{Buffer: b[:n], Region: r.mr}}, 0); err != nil {
		r.t.Fatalf("Send: %v", err)
	}
	return res
}

// readErr waits until the accepted side has failed, then reads from it
// until the Read fails and returns the error. Its progress goroutine takes
// the forged frames while nothing reads; a Read made at once would take
// the data frames already queued first and free their slots, and the
// credit for them would admit a frame the test sends beyond the credit,
// if the Read ran before that frame was taken.
func (r *rawPeer) readErr() error {
	deadline := time.Now().Add(5 * time.Second)
	for !r.conn.failed() && time.Now().Before(deadline) {
		runtime.Gosched()
	}
	r.conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	buf := make([]byte, 1<<16)
	for {
		// io.EOF may come first when the violation follows a fin.
		if _, err := r.conn.Read(buf); err != nil && err != io.EOF {
			return err
		}
	}
}

// ringDesc is a hello payload naming a 4 KiB ring (the raw peer exposes
// none: the Conn writes only in frames to a peer that reads nothing).
func ringDesc() []byte {
	b, _ := nd.MWDescriptor{Length: 4096}.MarshalBinary()
	return b
}

func TestHostilePeer(t *testing.T) {
	cfg := Config{QueueDepth: 2, InlineThreshold: 64, BufferSize: 4096}
	hello := header{Type: frameHello}
	cases := []struct {
		name  string
		forge func(r *rawPeer)
		want  error
	}{
		{"forged credit", func(r *rawPeer) {
			r.send(header{Type: frameCredit, SlotAck: 5}, nil) // it sent us one frame
		}, ErrProtocol},
		{"forged ring acknowledgment", func(r *rawPeer) {
			r.send(header{Type: frameCredit, RingAck: 1}, nil)
		}, ErrProtocol},
		{"data beyond the credit", func(r *rawPeer) {
			// A depth of 2 allows two data-class frames (the hello is
			// one) and one more per slot the Conn frees and credits:
			// with nothing read yet, only the hello's slot is freed (the
			// Conn's hello carried that credit). So the third data frame
			// exceeds every credit the Conn can have given.
			r.send(header{Type: frameData, Length: 1}, []byte{1})
			r.send(header{Type: frameData, Length: 1}, []byte{2})
			r.send(header{Type: frameData, Length: 1}, []byte{3})
		}, ErrProtocol},
		{"frame larger than a slot", func(r *rawPeer) {
			big := make([]byte, 200)
			r.send(header{Type: frameData, Length: uint32(len(big))}, big)
		}, ErrConnReset},
		{"ring frame beyond the ring", func(r *rawPeer) {
			r.send(header{Type: frameRing, Length: 4097}, nil)
		}, ErrProtocol},
		{"second hello", func(r *rawPeer) {
			r.send(hello, ringDesc())
		}, ErrProtocol},
		{"unknown frame", func(r *rawPeer) {
			r.send(header{Type: 99}, nil)
		}, ErrProtocol},
		{"finack before fin", func(r *rawPeer) {
			r.send(header{Type: frameFinAck}, nil)
		}, ErrProtocol},
		{"data after fin", func(r *rawPeer) {
			r.send(header{Type: frameFin}, nil)
			r.send(header{Type: frameData, Length: 1}, []byte{1})
		}, ErrProtocol},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := newRawPeer(t, cfg)
			c.forge(r)
			if err := r.readErr(); !errors.Is(err, c.want) {
				t.Fatalf("Read error %v, want %v", err, c.want)
			}
		})
	}
}

// TestHostileFirstFrame: the accepting side sends nothing before the
// dialing side's hello (iWARP: the active side sends first; siw as
// initiator drops a connection whose responder's first frame it finds
// behind the MPA reply), and a first frame that is not a valid hello, or
// none within HandshakeTimeout, ends the connection before Accept returns
// it: the dialing side is disconnected without having received a frame.
func TestHostileFirstFrame(t *testing.T) {
	hello := header{Type: frameHello}
	cases := []struct {
		name    string
		timeout time.Duration // HandshakeTimeout
		first   func(r *rawPeer)
	}{
		{"data before hello", 0, func(r *rawPeer) {
			r.send(header{Type: frameData, Length: 1}, []byte{1})
		}},
		{"hello without the ring", 0, func(r *rawPeer) {
			r.send(hello, nil)
		}},
		{"ring of the wrong size", 0, func(r *rawPeer) {
			b, _ := nd.MWDescriptor{Length: 8192}.MarshalBinary()
			r.send(hello, b)
		}},
		{"nothing", 200 * time.Millisecond, func(r *rawPeer) {}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			// The bad frames are refused at once: the default
			// HandshakeTimeout (10 s) outlasts the wait below.
			r := dialRaw(t, Config{QueueDepth: 2, InlineThreshold: 64, BufferSize: 4096, HandshakeTimeout: c.timeout})
			c.first(r)
			ctx, cancel := context.WithTimeout(r.ctx, 5*time.Second)
			defer cancel()
			if err := r.connector.NotifyDisconnect(ctx); err != nil {
				t.Fatalf("NotifyDisconnect: %v; want the accepting side to drop the connection", err)
			}
			var done [8]*nd.Result
			for n := r.cq.GetResults(done[:]); n > 0; n = r.cq.GetResults(done[:]) {
				for _, d := range done[:n] {
					for i := range r.recv {
						if d == &r.recv[i] && d.Status == nd.Success {
							t.Fatalf("the accepting side sent a frame (%d bytes)", d.BytesTransferred)
						}
					}
				}
			}
		})
	}
}

// TestHostileWriteOutsideRing: the window a Conn exposes covers its ring
// alone: an RDMA Write past its end fails at the peer and ends the
// connection; one inside it and announced is read as stream bytes.
func TestHostileWriteOutsideRing(t *testing.T) {
	r := newRawPeer(t, Config{QueueDepth: 2, InlineThreshold: 64, BufferSize: 4096})
	if r.window.Length != 4096 {
		t.Fatalf("window of %d bytes, want 4096", r.window.Length)
	}
	src := r.buf[40000:40010]
	copy(src, "0123456789")
	var w nd.Result
	if err := r.ep.Write(&w, []nd.SGE{{Buffer: src, Region: r.mr}}, r.window, 0, 0); err != nil {
		t.Fatal(err)
	}
	r.send(header{Type: frameRing, Length: 10}, nil)
	got := make([]byte, 10)
	r.conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.ReadFull(r.conn, got); err != nil || string(got) != "0123456789" {
		t.Fatalf("ReadFull = %q, %v", got, err)
	}
	var bad nd.Result
	if err := r.ep.Write(&bad, []nd.SGE{{Buffer: src, Region: r.mr}}, r.window, 4090, 0); err != nil {
		t.Fatal(err)
	}
	for {
		res := r.wait()
		if res == &bad {
			if !errors.Is(res.Status, nd.ErrAccessViolation) {
				t.Fatalf("Write past the ring: %v, want ErrAccessViolation", res.Status)
			}
			break
		}
	}
	if err := r.readErr(); !errors.Is(err, ErrConnReset) {
		t.Fatalf("Read after the peer's bad Write: %v, want ErrConnReset", err)
	}
}

// TestIdleBlockedReadCostsNoWakeups: while a Read waits in Notify on an
// idle connection, the connection's progress goroutine does not wake
// either: an idle connection costs nothing per unit of time.
func TestIdleBlockedReadCostsNoWakeups(t *testing.T) {
	r := newRawPeer(t, Config{QueueDepth: 2, InlineThreshold: 64, BufferSize: 4096, Spin: time.Microsecond, Linger: time.Millisecond})
	c := r.conn
	done := make(chan error, 1)
	go func() {
		_, err := c.Read(make([]byte, 16))
		done <- err
	}()
	deadline := time.Now().Add(5 * time.Second)
	for c.notifying.Load() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the Read never waited in Notify")
		}
		time.Sleep(time.Millisecond)
	}
	before := c.runLooks.Load()
	const window = 50 * time.Millisecond
	time.Sleep(window) // the span measured, not a synchronisation
	if looks := c.runLooks.Load() - before; looks > 2 {
		t.Fatalf("the progress goroutine looked %d times in %v while the Read waited", looks, window)
	}
	c.Close()
	if err := <-done; err == nil {
		t.Fatal("Read returned nil after Close")
	}
}

// TestReadTakesQueuedBytesBeforePolling: a Read that finds stream bytes
// already queued returns them without polling the completion queue, and
// polls once for more when they do not fill its buffer.
func TestReadTakesQueuedBytesBeforePolling(t *testing.T) {
	r := newRawPeer(t, Config{QueueDepth: 4, InlineThreshold: 64, BufferSize: 4096, Linger: time.Millisecond})
	for _, p := range []string{"ab", "c", "d"} {
		r.send(header{Type: frameData, Length: uint32(len(p))}, []byte(p))
	}
	c := r.conn
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	read := func(n int) (string, uint64) {
		t.Helper()
		b := make([]byte, n)
		k, err := c.Read(b)
		if err != nil {
			t.Fatalf("Read: %v", err)
		}
		c.mu.Lock()
		defer c.mu.Unlock()
		return string(b[:k]), c.readPolls
	}
	// The three frames were delivered before their sends completed; the
	// progress goroutine may have queued some of them already.
	c.mu.Lock()
	c.pollLocked()
	queued, polls := c.rxqLen, c.readPolls
	c.mu.Unlock()
	if queued != 3 {
		t.Fatalf("%d frames queued, want 3", queued)
	}
	if got, p := read(1); got != "a" || p != polls {
		t.Fatalf("Read %q after %d polls, want \"a\" after %d (bytes were queued)", got, p, polls)
	}
	for _, want := range []string{"b", "c"} {
		if got, p := read(1); got != want || p != polls {
			t.Fatalf("Read %q after %d polls, want %q after %d (bytes were queued)", got, p, want, polls)
		}
	}
	if got, p := read(4); got != "d" || p != polls+1 {
		t.Fatalf("Read %q after %d polls, want \"d\" after %d (one poll for more)", got, p, polls+1)
	}
}

// failed reports whether the connection has failed.
func (c *Conn) failed() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err != nil
}
