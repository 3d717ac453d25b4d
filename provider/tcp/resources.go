package tcp

import (
	"errors"
	"fmt"

	"github.com/godirect/nd"
)

// exhausted reports which resource err says ran out ("" if none): a
// process's or the system's file descriptors, or kernel memory.
func exhausted(err error) string {
	switch {
	case errors.Is(err, errProcFiles):
		return "the process's file descriptors (RLIMIT_NOFILE)"
	case errors.Is(err, errSysFiles):
		return "the system's file descriptors"
	case errors.Is(err, errNoBufs), errors.Is(err, errNoMem):
		return "kernel memory for sockets"
	}
	return ""
}

// resourceError is op's error when err says a resource ran out:
// ErrInsufficientResources naming it. ok is false for other errors.
func resourceError(op string, err error) (e error, ok bool) {
	what := exhausted(err)
	if what == "" {
		return nil, false
	}
	return &nd.OpError{Op: op, Status: nd.ErrInsufficientResources, Err: fmt.Errorf("out of %s: %w", what, err)}, true
}
