package tcp

import "context"

// The end of the stream, for Disconnect (engine.CloseWaiter): shutdown
// starts the end of the link and, when the writer goroutine runs, leaves
// the last frames and the end of the stream (a Terminate, the FIN) to it.
// finOut is closed once they are handed to the kernel, which sends them
// whether or not the process lives on.

// finished records that the link's end is handed to the kernel; it is
// called once, by whoever closed the sending side.
func (l *link) finished() { close(l.finOut) }

// WaitClosed implements engine.CloseWaiter: it returns nil once the end of
// the link that Close (or the peer, or a failure) started is handed to the
// kernel, or ctx's error if ctx ends first. Safe for concurrent use.
func (l *link) WaitClosed(ctx context.Context) error {
	select {
	case <-l.finOut:
		return nil
	default:
	}
	select {
	case <-l.finOut:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
