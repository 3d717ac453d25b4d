package pmi

import (
	"errors"
	"fmt"
)

// Error is a launcher's refusal: an answer whose rc is not 0.
type Error struct {
	Op   string // the command, such as "kvs-get"
	Code int    // the launcher's rc
	Msg  string // the launcher's msg or errmsg, if any
}

// Error reports the command, the launcher's code and its message.
func (e *Error) Error() string {
	if e.Msg != "" {
		return fmt.Sprintf("pmi: %s: launcher answered rc=%d: %s", e.Op, e.Code, e.Msg)
	}
	return fmt.Sprintf("pmi: %s: launcher answered rc=%d", e.Op, e.Code)
}

// ErrNotFound is returned by Get for a key no rank has put (or not before
// the last Fence).
var ErrNotFound = errors.New("pmi: key not found")

// ErrLauncherGone is wrapped by every error that follows the end of the
// connection to the launcher: it closed the descriptor or died, or the
// read failed. Done is closed at the same moment.
var ErrLauncherGone = errors.New("pmi: lost the connection to the launcher")

// ErrClosed is returned by calls after Close or Finalize.
var ErrClosed = errors.New("pmi: client closed")

// ErrBroken is wrapped by every call after one whose context ended while
// it waited for the launcher: the launcher's answer may still come, so
// the conversation can no longer be followed. Abort and Close still work.
var ErrBroken = errors.New("pmi: an earlier call was abandoned; the conversation with the launcher is lost")
