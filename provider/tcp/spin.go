package tcp

import (
	"net"
	"runtime"
	"syscall"
	"time"
)

// spinReader reads a TCP connection the way a latency-sensitive RDMA
// transport polls: when no data is there, it retries a non-blocking read for
// up to spin before parking in the runtime's network poller. A message that
// arrives within the spin is picked up without a goroutine wake-up, which is
// what costs most on loopback (a blocking Go read pays the poller's wake-up
// on every message).
//
// It reads the link's polls (the application's Poll calls: it keeps
// polling the socket as long as they grow, and parks only once they stop)
// and inSyscall (it counts its own long reads there, and yields the
// processor while it waits and the count is not zero).
type spinReader struct {
	l    *link
	c    *net.TCPConn
	raw  syscall.RawConn
	spin time.Duration
	// deferred: a response was queued whose writer wake-up waits for the
	// next read (deferRing); l.ring does that wake-up.
	deferred bool

	// One non-blocking read's buffer and outcome; readFn is built once so
	// that a read allocates nothing.
	buf    []byte
	n      int
	errno  syscall.Errno
	readFn func(fd uintptr) bool
}

// longRead: a read of at least this many bytes may copy long enough inside
// the kernel that pollers on this processor should yield to it.
const longRead = 64 << 10

func newSpinReader(l *link, c *net.TCPConn, spin time.Duration) *spinReader {
	r := &spinReader{l: l, c: c, spin: spin}
	if spin > 0 && spinSupported {
		if raw, err := c.SyscallConn(); err == nil {
			r.raw = raw
		}
	}
	r.readFn = func(fd uintptr) bool {
		m, err := readNonblocking(fd, r.buf)
		switch {
		case err == nil && m > 0:
			r.n, r.errno = m, 0
		case err == nil:
			r.n, r.errno = 0, syscall.ECONNRESET // EOF
		default:
			r.n, r.errno = 0, syscall.EAGAIN
			if e, ok := err.(syscall.Errno); ok {
				r.errno = e
			}
		}
		return true // never wait here: Read decides
	}
	return r
}

// deferRing asks for the writer's wake-up at the next read instead of now.
// The reader calls it for the response to a zero-length confirmation Read:
// by the next read, every message that arrived with it has reached the
// engine, and yielding once before the wake-up lets the application answer
// them first, so that the response and the answer leave in one write
// instead of two. Called by the reader only.
func (r *spinReader) deferRing() {
	if r.raw == nil {
		r.l.ring()
		return
	}
	r.deferred = true
}

// Read implements io.Reader.
func (r *spinReader) Read(p []byte) (int, error) {
	if r.deferred {
		r.deferred = false
		runtime.Gosched()
		r.l.ring()
	}
	if r.raw == nil || len(p) == 0 {
		return r.c.Read(p)
	}
	var deadline time.Time
	var seen uint64
	for i := 0; ; i++ {
		r.buf = p
		long := len(p) >= longRead
		if long {
			r.l.inSyscall.Add(1)
		}
		err := r.raw.Read(r.readFn)
		if long {
			r.l.inSyscall.Add(-1)
		}
		r.buf = nil
		if err != nil {
			return r.c.Read(p)
		}
		if r.n > 0 {
			return r.n, nil
		}
		if r.errno != syscall.EAGAIN {
			// EOF, a reset or a closed socket: let the blocking path
			// report it the usual way.
			return r.c.Read(p)
		}
		// Yield between polls: with one processor (a process pinned to
		// a core) the goroutine that polls the completion queue, and
		// the writer, must get to run while the reader waits.
		runtime.Gosched()
		if r.l.inSyscall.Load() > 0 {
			yieldProcessor()
		}
		if i&15 == 15 {
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
