package tcp

import (
	"errors"
	"io"
	"net"
	"runtime"
	"syscall"
	"time"
)

// errAgain: a non-blocking read found no data.
var errAgain = errors.New("tcp: no data yet")

// spinReader is the io.Reader under the link's bufio.Reader. It reads in one
// of two ways:
//
//   - non-blocking (nonblock set, by whoever holds rxMu for a poll): one
//     read(2) on the socket's descriptor through RawConn.Control, which
//     never waits and never takes the descriptor's read lock, so that it
//     works while the reader goroutine is parked in the network poller. No
//     data gives errAgain.
//   - blocking (the reader goroutine, inside an FPDU whose bytes are still
//     coming): it retries a non-blocking read for up to spin, yielding the
//     processor between tries, before parking in the runtime's network
//     poller. A segment that arrives within the spin is picked up without
//     a goroutine wake-up, which costs tens of microseconds on loopback.
//
// Only the holder of the link's rxMu uses it.
type spinReader struct {
	l        *link
	c        *net.TCPConn
	raw      syscall.RawConn // nil: no descriptor access, always c.Read
	spin     time.Duration
	nonblock bool
	watch    *time.Timer // awaitInput's, reused

	// One non-blocking read's buffer and outcome (the holder of rxMu's),
	// and a peek's (the reader goroutine's, without rxMu); the functions
	// are built once so that a read allocates nothing.
	buf       []byte
	n         int
	errno     syscall.Errno
	peekErrno syscall.Errno
	readFn    func(fd uintptr)      // read(2) into buf
	peekFn    func(fd uintptr) bool // for RawConn.Read: is a byte (or EOF) there?
	peekCt    func(fd uintptr)      // peekFn for RawConn.Control
}

// longRead: a read of at least this many bytes may copy long enough inside
// the kernel that pollers on this processor should yield to it.
const longRead = 64 << 10

func newSpinReader(l *link, c *net.TCPConn, spin time.Duration) *spinReader {
	r := &spinReader{l: l, c: c, spin: spin, watch: time.NewTimer(time.Hour)}
	r.watch.Stop()
	if spinSupported {
		if raw, err := c.SyscallConn(); err == nil {
			r.raw = raw
		}
	}
	r.readFn = func(fd uintptr) {
		m, err := readNonblocking(fd, r.buf)
		r.n, r.errno = outcome(m, err)
	}
	var one [1]byte
	r.peekFn = func(fd uintptr) bool {
		_, err := peekNonblocking(fd, one[:])
		_, r.peekErrno = outcome(0, err)
		return r.peekErrno != syscall.EAGAIN // wait for readiness only when empty
	}
	r.peekCt = func(fd uintptr) { r.peekFn(fd) }
	return r
}

// outcome maps a non-blocking call's result: bytes, or errno 0 with no
// bytes for the end of the stream, or the errno (EAGAIN: nothing yet).
func outcome(m int, err error) (int, syscall.Errno) {
	if err == nil {
		return max(m, 0), 0
	}
	if e, ok := err.(syscall.Errno); ok {
		return 0, e
	}
	return 0, syscall.EIO
}

// Read implements io.Reader.
func (r *spinReader) Read(p []byte) (int, error) {
	if r.raw == nil || len(p) == 0 {
		return r.c.Read(p)
	}
	if r.nonblock {
		n, errno, ok := r.readNow(p)
		switch {
		case !ok:
			return 0, net.ErrClosed
		case n > 0:
			return n, nil
		case errno == 0:
			return 0, io.EOF
		case errno == syscall.EAGAIN:
			return 0, errAgain
		}
		return 0, errno
	}
	var deadline time.Time
	var seen uint64
	for i := 0; ; i++ {
		long := len(p) >= longRead
		if long {
			r.l.inSyscall.Add(1)
		}
		n, errno, ok := r.readNow(p)
		if long {
			r.l.inSyscall.Add(-1)
		}
		if !ok || n == 0 && errno != syscall.EAGAIN {
			// End of stream, a reset or a closed socket: the blocking
			// read reports it the usual way.
			return r.c.Read(p)
		}
		if n > 0 {
			return n, nil
		}
		if r.spin <= 0 {
			return r.c.Read(p)
		}
		// Yield between polls: with one processor (a process pinned to
		// a core) the application and the writer must get to run while
		// the reader waits.
		runtime.Gosched()
		if r.l.inSyscall.Load() > 0 {
			yieldProcessor()
		}
		if i&15 == 15 {
			// Parking while the application polls would leave the rest
			// of the FPDU to the runtime's network poller, which a
			// processor busy polling checks only now and then.
			now := time.Now()
			if a := r.l.polls.Load(); a != seen {
				seen, deadline = a, now.Add(r.spin)
				continue
			}
			if deadline.IsZero() {
				deadline = now.Add(r.spin)
			} else if now.After(deadline) {
				return r.c.Read(p)
			}
		}
	}
}

// readNow makes one non-blocking read into p; ok is false when the
// descriptor is closed.
func (r *spinReader) readNow(p []byte) (n int, errno syscall.Errno, ok bool) {
	r.buf = p
	err := r.raw.Control(r.readFn)
	r.buf = nil
	return r.n, r.errno, err == nil
}

// ready reports, without blocking or reading, whether the socket has data
// or has ended (false: nothing yet, or no descriptor access).
func (r *spinReader) ready() bool {
	if r.raw == nil {
		return false
	}
	r.peekErrno = syscall.EAGAIN
	if r.raw.Control(r.peekCt) != nil {
		return true
	}
	return r.peekErrno != syscall.EAGAIN
}

// awaitInput returns once the socket has data (or ended), or a poll left
// a long FPDU to the reader (kickReader), or with err when the wait failed
// (the socket closed, a read deadline passed). Called by the reader
// goroutine, without rxMu.
//
// While the application polls the link, its polls read the socket, and the
// reader only waits for their kicks, checking every watchPeriod whether the
// polls went on. When they stop, or the application waits in Notify
// (Watch), the reader polls the socket itself for up to spin, then parks in
// the runtime's network poller.
func (r *spinReader) awaitInput() error {
	l := r.l
	if r.raw == nil {
		// Without descriptor access the reader reads blocking; the
		// bufio fill of the next step waits.
		return nil
	}
	for seen := l.polls.Load(); ; {
		if l.rxKicked.Swap(false) {
			return nil
		}
		if l.appWaits.Load() {
			break
		}
		r.watch.Reset(watchPeriod)
		select {
		case <-l.rxKick:
			r.watch.Stop()
			continue
		case <-r.watch.C:
		}
		if a := l.polls.Load(); a != seen {
			seen = a
			continue
		}
		break
	}
	if r.spin > 0 {
		seen := l.polls.Load()
		deadline := time.Now().Add(r.spin)
		for i := 1; ; i++ {
			if r.ready() || l.rxKicked.Swap(false) {
				return nil
			}
			runtime.Gosched()
			if l.polls.Load() != seen && !l.appWaits.Load() {
				break // the application polls again
			}
			if i&15 == 0 && time.Now().After(deadline) {
				break
			}
		}
	}
	// Park; a poll that kicks the reader meanwhile reads on by itself.
	l.setParked(true)
	if l.rxKicked.Swap(false) {
		l.setParked(false)
		return nil
	}
	err := r.raw.Read(r.peekFn)
	l.setParked(false)
	return err
}

// watchPeriod is how often a reader waiting for kicks checks that the
// application still polls: when it stopped without waiting in Notify (it
// polls another endpoint), inbound traffic waits up to about two periods.
// Each check is a timer wake-up of the reader while the application polls.
const watchPeriod = 50 * time.Microsecond

// rawWriter writes to the socket's descriptor once, without blocking and
// without the descriptor's write lock (RawConn.Control), for inline sends;
// the holder of the link's txMu uses it.
type rawWriter struct {
	raw syscall.RawConn
	buf []byte
	n   int
	err error
	fn  func(fd uintptr) // built once, so that a write allocates nothing
}

func (w *rawWriter) init(c *net.TCPConn) {
	if spinSupported {
		if raw, err := c.SyscallConn(); err == nil {
			w.raw = raw
		}
	}
	w.fn = func(fd uintptr) { w.n, w.err = writeNonblocking(fd, w.buf) }
}

// write returns how many bytes of b the socket took; a full send buffer is
// not an error (0 bytes).
func (w *rawWriter) write(b []byte) (int, error) {
	if w.raw == nil {
		return 0, nil
	}
	w.buf = b
	err := w.raw.Control(w.fn)
	w.buf = nil
	if err != nil {
		return 0, err
	}
	if w.err == syscall.EAGAIN {
		return 0, nil
	}
	return max(w.n, 0), w.err
}
