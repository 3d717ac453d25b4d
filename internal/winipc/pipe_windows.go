package winipc

import (
	"context"
	"errors"
	"os"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/windows"
)

// Pipes are named pipes in message mode, local clients only. A listener
// keeps one instance waiting for a client at all times, so that its name
// exists from Listen to Close and a second Listen of the same name fails.
// Each connected end is an *os.File over an overlapped handle, served by
// the Go runtime's I/O completion port: reads and writes park the
// goroutine, deadlines work, and Close ends a blocked Read.

// ErrNameInUse: another listener holds the name.
var ErrNameInUse = errors.New("winipc: the pipe name is in use")

// ErrNoListener: nobody listens on the name.
var ErrNoListener = errors.New("winipc: nobody listens on the pipe name")

// ErrListenerClosed is what Accept returns once the listener is closed.
var ErrListenerClosed = errors.New("winipc: listener closed")

// ErrMessageTooLong: a message did not fit the buffer given to
// ReadMessage (the rest of it is discarded with the pipe: the caller
// closes it).
var ErrMessageTooLong = errors.New("winipc: message longer than the buffer")

// pipePath returns the pipe's path for name.
func pipePath(name string) string { return `\\.\pipe\` + name }

const (
	pipeBuffer = 4096
	pipeMode   = windows.PIPE_TYPE_MESSAGE | windows.PIPE_READMODE_MESSAGE | windows.PIPE_WAIT | windows.PIPE_REJECT_REMOTE_CLIENTS
)

// Listener accepts connections on a pipe name. Accept may be called by
// one goroutine at a time; Close may be called from any goroutine, also
// while Accept waits.
type Listener struct {
	path    []uint16
	stop    windows.Handle // a manual-reset event set by Close
	reserve windows.Handle // the named event that holds the name

	mu        sync.Mutex
	pending   windows.Handle // the instance waiting for the next client
	closed    bool
	accepting bool // an Accept uses pending: it closes it if Close came
}

// Listen creates the pipe name. It fails with ErrNameInUse if the name
// exists. The name must not contain a backslash.
//
// The name is held twice: by the first instance
// (FILE_FLAG_FIRST_PIPE_INSTANCE) and by a named event of the same name
// in the session's namespace, which Wine, which does not enforce the
// flag, honours too. Both go when the listener closes or its process
// ends.
func Listen(name string) (*Listener, error) {
	if strings.ContainsRune(name, '\\') {
		return nil, errors.New("winipc: a pipe name must not contain a backslash")
	}
	path, err := windows.UTF16FromString(pipePath(name))
	if err != nil {
		return nil, err
	}
	rname, err := windows.UTF16FromString(reserveName(name))
	if err != nil {
		return nil, err
	}
	reserve, err := windows.CreateEvent(nil, 1, 0, &rname[0])
	if errors.Is(err, windows.ERROR_ALREADY_EXISTS) {
		windows.CloseHandle(reserve)
		return nil, ErrNameInUse
	}
	if err != nil {
		return nil, os.NewSyscallError("CreateEvent", err)
	}
	h, err := newInstance(path, true)
	if err != nil {
		windows.CloseHandle(reserve)
		return nil, err
	}
	stop, err := windows.CreateEvent(nil, 1, 0, nil)
	if err != nil {
		windows.CloseHandle(h)
		windows.CloseHandle(reserve)
		return nil, err
	}
	return &Listener{path: path, stop: stop, reserve: reserve, pending: h}, nil
}

// newInstance creates a pipe instance; first asks that it be the name's
// first (the name is taken otherwise).
func newInstance(path []uint16, first bool) (windows.Handle, error) {
	flags := uint32(windows.PIPE_ACCESS_DUPLEX | windows.FILE_FLAG_OVERLAPPED)
	if first {
		flags |= windows.FILE_FLAG_FIRST_PIPE_INSTANCE
	}
	h, err := windows.CreateNamedPipe(&path[0], flags, pipeMode, windows.PIPE_UNLIMITED_INSTANCES, pipeBuffer, pipeBuffer, 0, nil)
	if err != nil {
		if first && (errors.Is(err, windows.ERROR_ACCESS_DENIED) || errors.Is(err, windows.ERROR_PIPE_BUSY)) {
			return 0, ErrNameInUse
		}
		return 0, os.NewSyscallError("CreateNamedPipe", err)
	}
	return h, nil
}

// Accept waits for the next client and returns its connection.
func (l *Listener) Accept() (*Conn, error) {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil, ErrListenerClosed
	}
	h := l.pending
	l.accepting = true
	l.mu.Unlock()
	defer func() {
		l.mu.Lock()
		l.accepting = false
		if l.closed {
			windows.CloseHandle(l.pending)
		}
		l.mu.Unlock()
	}()
	ev, err := windows.CreateEvent(nil, 1, 0, nil)
	if err != nil {
		return nil, err
	}
	defer windows.CloseHandle(ev)
	ov := windows.Overlapped{HEvent: ev}
	err = windows.ConnectNamedPipe(h, &ov)
	switch {
	case err == nil, errors.Is(err, windows.ERROR_PIPE_CONNECTED):
	case errors.Is(err, windows.ERROR_IO_PENDING):
		w, werr := windows.WaitForMultipleObjects([]windows.Handle{ev, l.stop}, false, windows.INFINITE)
		if werr != nil || w != windows.WAIT_OBJECT_0 {
			// Closed: the pending connect is cancelled before the
			// instance (and ov) go away.
			windows.CancelIoEx(h, &ov)
			var n uint32
			windows.GetOverlappedResult(h, &ov, &n, true)
			return nil, ErrListenerClosed
		}
		var n uint32
		if err := windows.GetOverlappedResult(h, &ov, &n, false); err != nil && !errors.Is(err, windows.ERROR_PIPE_CONNECTED) {
			return nil, os.NewSyscallError("ConnectNamedPipe", err)
		}
	default:
		return nil, os.NewSyscallError("ConnectNamedPipe", err)
	}
	// The next instance exists before this one leaves the listener, so
	// the name never disappears.
	next, nerr := newInstance(l.path, false)
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		if nerr == nil {
			windows.CloseHandle(next)
		}
		return nil, ErrListenerClosed // the deferred call closes h
	}
	if nerr != nil {
		l.mu.Unlock()
		windows.DisconnectNamedPipe(h)
		return nil, nerr
	}
	l.pending = next
	l.mu.Unlock()
	var pid uint32
	if err := windows.GetNamedPipeClientProcessId(h, &pid); err != nil {
		windows.CloseHandle(h)
		return nil, os.NewSyscallError("GetNamedPipeClientProcessId", err)
	}
	return newConn(h, pid), nil
}

// Close removes the name (once the connections accepted stay the only
// instances) and ends a waiting Accept.
func (l *Listener) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil
	}
	l.closed = true
	windows.SetEvent(l.stop)
	// The stop event stays open: an Accept may still wait on it. The
	// pending instance is closed here, or by the Accept that uses it once
	// it has cancelled its connect.
	var err error
	if !l.accepting {
		err = windows.CloseHandle(l.pending)
	}
	windows.CloseHandle(l.reserve)
	return err
}

var (
	modkernel32       = windows.NewLazySystemDLL("kernel32.dll")
	procWaitNamedPipe = modkernel32.NewProc("WaitNamedPipeW")
)

// Dial connects to the listener on name. While every instance is taken
// (ERROR_PIPE_BUSY) it waits for one, until ctx ends.
func Dial(ctx context.Context, name string) (*Conn, error) {
	path, err := windows.UTF16FromString(pipePath(name))
	if err != nil {
		return nil, err
	}
	for {
		h, err := windows.CreateFile(&path[0], windows.GENERIC_READ|windows.GENERIC_WRITE, 0, nil,
			windows.OPEN_EXISTING, windows.FILE_FLAG_OVERLAPPED|windows.SECURITY_SQOS_PRESENT|windows.SECURITY_IDENTIFICATION, 0)
		if err == nil {
			mode := uint32(windows.PIPE_READMODE_MESSAGE)
			if err := windows.SetNamedPipeHandleState(h, &mode, nil, nil); err != nil {
				windows.CloseHandle(h)
				return nil, os.NewSyscallError("SetNamedPipeHandleState", err)
			}
			var pid uint32
			if err := windows.GetNamedPipeServerProcessId(h, &pid); err != nil {
				windows.CloseHandle(h)
				return nil, os.NewSyscallError("GetNamedPipeServerProcessId", err)
			}
			return newConn(h, pid), nil
		}
		switch {
		case errors.Is(err, windows.ERROR_FILE_NOT_FOUND):
			return nil, ErrNoListener
		case !errors.Is(err, windows.ERROR_PIPE_BUSY):
			return nil, os.NewSyscallError("CreateFile", err)
		case !listening(name):
			// The instances left are connections a closed listener
			// accepted: the name stays while they do, but nobody
			// accepts on it.
			return nil, ErrNoListener
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		// Wait up to 50 ms for an instance to free, then look at ctx
		// again.
		procWaitNamedPipe.Call(uintptr(unsafePointer(&path[0])), 50)
	}
}

// listening reports whether a listener holds name: its named event
// exists (see Listen).
func listening(name string) bool {
	rname, err := windows.UTF16PtrFromString(reserveName(name))
	if err != nil {
		return false
	}
	h, err := windows.OpenEvent(windows.SYNCHRONIZE, false, rname)
	if err != nil {
		return false
	}
	windows.CloseHandle(h)
	return true
}

// reserveName is the name of the event that holds a listener's name.
func reserveName(name string) string { return `Local\godirect-pipe-` + name }

// Conn is one end of a connected pipe: whole messages in both directions.
// One goroutine at a time may read and one write; Close and the deadline
// setters may be called from any goroutine.
type Conn struct {
	f   *os.File
	pid uint32
}

func newConn(h windows.Handle, pid uint32) *Conn {
	return &Conn{f: os.NewFile(uintptr(h), "pipe"), pid: pid}
}

// PeerPID returns the process id of the other end, as the kernel knows it.
func (c *Conn) PeerPID() uint32 { return c.pid }

// ReadMessage reads the next message into buf and returns it. It returns
// io.EOF once the peer closed its end (or its process ended), and
// ErrMessageTooLong if the message does not fit buf.
func (c *Conn) ReadMessage(buf []byte) ([]byte, error) {
	n, err := c.f.Read(buf)
	if err != nil {
		if errors.Is(err, windows.ERROR_MORE_DATA) {
			return nil, ErrMessageTooLong
		}
		return nil, err
	}
	return buf[:n], nil
}

// WriteMessage writes b as one message; b must not be empty.
func (c *Conn) WriteMessage(b []byte) error {
	if len(b) == 0 {
		return errors.New("winipc: empty message")
	}
	_, err := c.f.Write(b)
	return err
}

// SetReadDeadline bounds ReadMessage (zero: no bound).
func (c *Conn) SetReadDeadline(t time.Time) error { return c.f.SetReadDeadline(t) }

// SetWriteDeadline bounds WriteMessage (zero: no bound).
func (c *Conn) SetWriteDeadline(t time.Time) error { return c.f.SetWriteDeadline(t) }

// Close closes this end; the peer's reads return io.EOF.
func (c *Conn) Close() error { return c.f.Close() }
