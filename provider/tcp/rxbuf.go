package tcp

import (
	"errors"
	"io"

	"github.com/godirect/nd/internal/engine"
)

// errBufferFull: a peek asked for more bytes than the buffer holds.
var errBufferFull = errors.New("tcp: peek larger than the reader's buffer")

// emptyReadsLimit bounds the reads in a row that return nothing and no
// error before a fill gives up with io.ErrNoProgress.
const emptyReadsLimit = 100

// rxBuffer is the link's buffered reader over its spinReader, with the
// methods of the standard library's bufio.Reader that the link needs (the
// link has no bufio.Reader), and able to grow (grow) without losing what
// it holds. A
// read error is returned once, to the call that met it, so that errAgain
// (a poll found no data) does not stick. Only the holder of the link's
// rxMu uses it.
type rxBuffer struct {
	src   io.Reader
	two   twoReader // src, when it can read into two places at once
	place bool      // set by the reader: long reads go into place (Read)
	// placeMin and placeSpill (tuning.go), fields for tests.
	placeMin, placeSpill int
	buf                  []byte
	r, w                 int // buf[r:w] is buffered
	err                  error
}

// twoReader reads once into p and then q (socket.readTwo), returning how
// many bytes it read into the two.
type twoReader interface {
	readTwo(p, q []byte) (int, error)
}

func newRxBuffer(src io.Reader, size int) *rxBuffer {
	b := &rxBuffer{src: src, buf: make([]byte, size), placeMin: placeMin, placeSpill: placeSpill}
	b.two, _ = src.(twoReader)
	return b
}

// Size returns the buffer's size in bytes.
func (b *rxBuffer) Size() int { return len(b.buf) }

// Buffered returns the number of bytes that can be read without reading
// the source.
func (b *rxBuffer) Buffered() int { return b.w - b.r }

// grow makes the buffer size bytes long, keeping what it holds (no-op when
// it is already that long).
func (b *rxBuffer) grow(size int) {
	if size <= len(b.buf) {
		return
	}
	nb := make([]byte, size)
	b.w = copy(nb, b.buf[b.r:b.w])
	b.r, b.buf = 0, nb
}

// takeErr returns the pending read error and clears it.
func (b *rxBuffer) takeErr() error {
	err := b.err
	b.err = nil
	return err
}

// fill reads the source once into the free end of the buffer, after moving
// what is buffered to its front; while place is set, into its first
// placeSpill bytes while they have room, so that the bytes after a header
// stay in the socket for Read to place.
func (b *rxBuffer) fill() {
	if b.r > 0 {
		b.w = copy(b.buf, b.buf[b.r:b.w])
		b.r = 0
	}
	end := len(b.buf)
	if b.place && b.w < b.placeSpill {
		end = min(end, b.placeSpill)
	}
	for range emptyReadsLimit {
		n, err := b.src.Read(b.buf[b.w:end])
		b.w += n
		if err != nil {
			b.err = err
			return
		}
		if n > 0 {
			return
		}
	}
	b.err = io.ErrNoProgress
}

// Peek returns the next n bytes without consuming them, reading the source
// as long as they are not buffered and it reports no error. With fewer
// than n bytes it returns those and the error that stopped it
// (errBufferFull when n is larger than the buffer). The bytes stay valid
// until the next read.
func (b *rxBuffer) Peek(n int) ([]byte, error) {
	if n > len(b.buf) {
		return b.buf[b.r:b.w], errBufferFull
	}
	for b.w-b.r < n && b.err == nil {
		b.fill()
	}
	if avail := b.w - b.r; avail < n {
		return b.buf[b.r:b.w], b.takeErr()
	}
	return b.buf[b.r : b.r+n], nil
}

// ReadEnd is Read for bytes that end an inbound payload: a read that
// would go from the source straight into p stops one byte short, so that
// the payload's last byte comes through the buffer and Place stores it
// once, after the rest (the kernel's copy into p gives it no store of its
// own). It takes no more reads of the source than Read: the byte comes in
// with what follows the payload, which is read next anyway.
func (b *rxBuffer) ReadEnd(p []byte) (int, error) {
	if len(p) > 1 && b.r == b.w && b.err == nil && b.direct(len(p)) {
		return b.readDirect(p[:len(p)-1])
	}
	return b.Read(p)
}

// direct reports whether a Read of n bytes with nothing buffered reads
// the source straight into the caller's slice.
func (b *rxBuffer) direct(n int) bool {
	return b.place && b.two != nil && n >= b.placeMin || n >= len(b.buf)
}

// readDirect reads the source straight into p, nothing being buffered:
// in place mode, from a twoReader, for at least placeMin bytes, with what
// follows into the buffer's first placeSpill bytes in the same call.
func (b *rxBuffer) readDirect(p []byte) (int, error) {
	if !b.place || b.two == nil || len(p) < b.placeMin {
		return b.src.Read(p)
	}
	n, err := b.two.readTwo(p, b.buf[:min(len(b.buf), b.placeSpill)])
	if n <= len(p) {
		return n, err
	}
	b.r, b.w, b.err = 0, n-len(p), err
	return len(p), nil
}

// Read implements io.Reader: buffered bytes first; with none, a read of
// at least placeMin bytes while place is set, from a twoReader, goes
// straight into p with what follows into the first placeSpill bytes of
// the buffer in the same call (a long payload's end, then its trailer and
// the next header); else a read as long as the buffer or longer goes
// straight into p, and a shorter one reads the source once into the
// buffer.
func (b *rxBuffer) Read(p []byte) (int, error) {
	if len(p) == 0 {
		if b.Buffered() > 0 {
			return 0, nil
		}
		return 0, b.takeErr()
	}
	if b.r == b.w {
		if b.err != nil {
			return 0, b.takeErr()
		}
		if b.direct(len(p)) {
			return b.readDirect(p)
		}
		b.r, b.w = 0, 0
		n, err := b.src.Read(b.buf)
		if n == 0 {
			return 0, err
		}
		b.w, b.err = n, err
	}
	// Place, not copy: p may be an inbound Write's bytes, whose last
	// byte the application polls and may overwrite at once.
	n := engine.Place(p, b.buf[b.r:b.w])
	b.r += n
	return n, nil
}
