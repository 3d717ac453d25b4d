package shm

import (
	"encoding/binary"
	"errors"
	"io"
	"sync"
	"time"

	"golang.org/x/sys/windows"

	"github.com/godirect/nd/internal/winipc"
)

// On Windows a connection's setup goes over a named pipe in message mode
// (winipc). The handles a setup message passes follow its body, named by
// their values in the sender's process, and a count ends it (setupwire.go).
// The receiver takes them from the sender's process with DuplicateHandle
// (winipc.Process.TakeHandle): a value names only a handle of the sender,
// never one of the receiver. The sender keeps each handle open for as long
// as the receiver may take it (the section and events for the link's life,
// an AllocateMemory section until FreeMemory).

// setupConn is a connection's pipe and the peer's process, opened from the
// process id the kernel gives for the pipe's other end.
type setupConn struct {
	c    *winipc.Conn
	proc *winipc.Process
	hold windows.Handle // the active side's port reservation (transport_windows.go), 0: none
}

type (
	osHandle = windows.Handle
	peerProc = *winipc.Process
)

// maxTrailer is what a setup message carries beyond its body: the handles
// and their count, and the request's active address and port
// (setupwire.go).
const maxTrailer = 8*maxHandles + 1 + activeTail

// newSetupConn opens the peer's process of pipe c; it closes c on failure.
func newSetupConn(c *winipc.Conn) (*setupConn, error) {
	proc, err := winipc.OpenProcess(c.PeerPID())
	if err != nil {
		c.Close()
		return nil, err
	}
	return &setupConn{c: c, proc: proc}, nil
}

// Close closes the pipe: the peer's reads end. The process handle stays
// until release.
func (c *setupConn) Close() error { return c.c.Close() }

// release closes the process handle and the port reservation (the link's
// cleanup, once nothing copies against the peer any more).
func (c *setupConn) release() {
	c.proc.Close()
	if c.hold != 0 {
		windows.CloseHandle(c.hold)
		c.hold = 0
	}
}

// readMessage reads one setup message and takes the handles it names
// (closed unless the caller keeps them). It honours c's read deadline. mu
// is for Linux's second reader of the socket; the pipe has one reader.
func readMessage(c *setupConn, buf []byte, mu *sync.Mutex) ([]byte, []osHandle, error) {
	msg, err := c.c.ReadMessage(buf)
	if errors.Is(err, io.EOF) {
		return nil, nil, errEOF
	}
	if err != nil {
		if errors.Is(err, winipc.ErrMessageTooLong) {
			return nil, nil, errMessage
		}
		return nil, nil, err
	}
	body, vals, k, ok := splitHandleValues(msg)
	if !ok {
		return nil, nil, errMessage
	}
	var hs []osHandle
	for i := range k {
		h, err := c.proc.TakeHandle(binary.LittleEndian.Uint64(vals[8*i:]))
		if err != nil {
			// The sender closed it, or named something it does not
			// hold: the message came without its handles.
			closeAll(hs)
			return nil, nil, errNoDescriptors
		}
		hs = append(hs, h)
	}
	return body, hs, nil
}

// closeAll closes handles.
func closeAll(hs []osHandle) {
	for _, h := range hs {
		if h != 0 {
			windows.CloseHandle(h)
		}
	}
}

// send writes one setup message, naming the handles hs of this process.
func (l *link) send(b []byte, hs []osHandle) error {
	vals := make([]uint64, len(hs))
	for i, h := range hs {
		vals[i] = uint64(h)
	}
	msg := appendHandleValues(append(make([]byte, 0, len(b)+8*len(hs)+1), b...), vals)
	l.sendMu.Lock()
	defer l.sendMu.Unlock()
	l.conn.c.SetWriteDeadline(time.Now().Add(l.t.p.cfg.HandshakeTimeout))
	return l.conn.c.WriteMessage(msg)
}
