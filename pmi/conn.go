package pmi

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// conn is the connection to the launcher: the descriptor of PMI_FD or the
// socket to PMI_PORT.
//
// Until start, the handshake reads and writes on the caller's goroutine
// (exchangeSync). From start on, one reader goroutine reads every message
// the launcher sends and hands it to the call waiting for it (answers), so
// that the end of the connection is seen at once, even while no call is
// under way (done). Requests go one at a time (mu): PMI answers carry no
// request id, so a call writes its request and takes the next answer.
// Writes take wmu, which Abort takes without mu, so that it can be sent
// while another goroutine waits in a call.
type conn struct {
	nc net.Conn
	br *bufio.Reader
	v2 bool // PMI-2 frames after the handshake

	wmu  sync.Mutex
	wbuf []byte

	mu     sync.Mutex
	broken error // a call was abandoned; under mu

	answers chan message
	done    chan struct{}
	err     error // why done closed; written before close(done)
	once    sync.Once

	// ending is set before Finalize's request and by Close: the
	// connection's end is then expected, not the launcher's loss.
	ending atomic.Bool
}

// maxUnread bounds the answers the launcher may send ahead of the calls
// that take them; more is a protocol error (PMI answers only what is
// asked).
const maxUnread = 4

func newConn(nc net.Conn) *conn {
	return &conn{nc: nc, br: bufio.NewReaderSize(nc, 4096), answers: make(chan message, maxUnread), done: make(chan struct{})}
}

// withDeadline runs f with the connection's deadlines following ctx: its
// deadline, and at once when it is canceled. It returns ctx's cause if
// ctx ended during f and f failed.
func (c *conn) withDeadline(ctx context.Context, f func() error) error {
	if d, ok := ctx.Deadline(); ok {
		c.nc.SetDeadline(d)
	}
	stop := context.AfterFunc(ctx, func() { c.nc.SetDeadline(time.Unix(1, 0)) })
	err := f()
	stop()
	c.nc.SetDeadline(time.Time{})
	if err != nil && errors.Is(err, os.ErrDeadlineExceeded) {
		// Only ctx sets deadlines: its Done follows at once.
		<-ctx.Done()
	}
	if err != nil && ctx.Err() != nil {
		return context.Cause(ctx)
	}
	return err
}

// writeMsg sends m in the framing v2 selects.
func (c *conn) writeMsg(m message, v2 bool) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if v2 {
		c.wbuf = appendV2(c.wbuf[:0], m)
	} else {
		c.wbuf = appendV1(c.wbuf[:0], m)
	}
	_, err := c.nc.Write(c.wbuf)
	return err
}

// readMsg reads one message in the framing v2 selects.
func readMsg(br *bufio.Reader, v2 bool) (message, error) {
	if !v2 {
		line, err := readLine(br)
		if err != nil {
			return message{}, err
		}
		return parseV1(line)
	}
	var field [frameLenDigits]byte
	if _, err := io.ReadFull(br, field[:]); err != nil {
		return message{}, err
	}
	n, err := parseFrameLen(field[:])
	if err != nil {
		return message{}, err
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(br, body); err != nil {
		return message{}, unexpectedEOF(err)
	}
	return parseV2(body)
}

// readLine reads up to '\n' (dropped), at most maxLine bytes.
func readLine(br *bufio.Reader) ([]byte, error) {
	var line []byte
	for {
		chunk, err := br.ReadSlice('\n')
		line = append(line, chunk...)
		if len(line) > maxLine+1 {
			return nil, protoErr("a PMI-1 line longer than %d bytes", maxLine)
		}
		switch {
		case err == nil:
			return line[:len(line)-1], nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case len(line) > 0:
			return nil, unexpectedEOF(err)
		default:
			return nil, err
		}
	}
}

func unexpectedEOF(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

// exchangeSync sends req (unless it is empty) and reads one answer, on
// the caller's goroutine: the handshake, before start.
func (c *conn) exchangeSync(ctx context.Context, req message, v2 bool) (message, error) {
	var ans message
	err := c.withDeadline(ctx, func() error {
		if req.cmd != "" {
			if err := c.writeMsg(req, v2); err != nil {
				return err
			}
		}
		var err error
		ans, err = readMsg(c.br, v2)
		return err
	})
	if err != nil && ctx.Err() == nil && !errors.Is(err, ErrProtocol) {
		err = lost(err)
	}
	return ans, err
}

// lost wraps a failed read or write of the connection.
func lost(err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return fmt.Errorf("%w: the launcher closed it", ErrLauncherGone)
	}
	return fmt.Errorf("%w: %w", ErrLauncherGone, err)
}

// start ends the handshake: from now on the reader goroutine reads, in
// PMI-2 frames when v2.
func (c *conn) start(v2 bool) {
	c.v2 = v2
	go c.read()
}

func (c *conn) read() {
	for {
		m, err := readMsg(c.br, c.v2)
		if err != nil {
			if c.ending.Load() {
				err = ErrClosed
			} else if !errors.Is(err, ErrProtocol) {
				err = lost(err)
			}
			c.fail(err)
			return
		}
		select {
		case c.answers <- m:
		default:
			c.fail(protoErr("the launcher sent %d messages nobody asked for (the last: %v)", maxUnread+1, m))
			return
		}
	}
}

// fail ends the connection once, for reason err.
func (c *conn) fail(err error) {
	c.once.Do(func() {
		c.err = err
		close(c.done)
		c.nc.Close()
	})
}

// call sends req and returns the launcher's answer, which must be a want.
// A call whose ctx ends while it waits leaves the connection broken: the
// answer may still come (see ErrBroken).
func (c *conn) call(ctx context.Context, req message, want string) (message, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.broken != nil {
		return message{}, c.broken
	}
	select {
	case <-c.done:
		return message{}, c.err
	default:
	}
	if err := ctx.Err(); err != nil {
		return message{}, context.Cause(ctx)
	}
	err := c.withDeadline(ctx, func() error { return c.writeMsg(req, c.v2) })
	if err != nil {
		if ctx.Err() != nil {
			c.broken = fmt.Errorf("%w (%s: %w)", ErrBroken, req.cmd, err)
			return message{}, err
		}
		c.fail(lost(err))
		return message{}, c.err
	}
	select {
	case ans := <-c.answers:
		if ans.cmd != want {
			err := protoErr("the launcher answered %v to %s (want %s)", ans, req.cmd, want)
			c.fail(err)
			return message{}, err
		}
		return ans, nil
	case <-c.done:
		// An answer read just before the end is still the answer.
		select {
		case ans := <-c.answers:
			if ans.cmd == want {
				return ans, nil
			}
		default:
		}
		return message{}, c.err
	case <-ctx.Done():
		c.broken = fmt.Errorf("%w (%s: %w)", ErrBroken, req.cmd, context.Cause(ctx))
		return message{}, context.Cause(ctx)
	}
}

// send writes m without waiting for an answer (abort), bounded by ctx.
func (c *conn) send(ctx context.Context, m message) error {
	select {
	case <-c.done:
		return c.err
	default:
	}
	var err error
	if d, ok := ctx.Deadline(); ok {
		c.nc.SetWriteDeadline(d)
	}
	stop := context.AfterFunc(ctx, func() { c.nc.SetWriteDeadline(time.Unix(1, 0)) })
	err = c.writeMsg(m, c.v2)
	stop()
	if err != nil {
		return lost(err)
	}
	return nil
}

// close ends the connection; the reader goroutine returns.
func (c *conn) close() {
	c.ending.Store(true)
	c.fail(ErrClosed)
}
