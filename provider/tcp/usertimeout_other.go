//go:build !linux && !darwin && !windows

package tcp

import (
	"errors"
	"time"
)

// userTimeoutSupported: the platform bounds unacknowledged data per
// socket. Here it does not: the system's retransmission limit applies.
const userTimeoutSupported = false

var errUserTimeoutUnsupported = errors.New("no per-socket bound on unacknowledged data on this platform")

func setUserTimeoutFD(uintptr, time.Duration) error { return errUserTimeoutUnsupported }

func userTimeoutOf(uintptr) (time.Duration, error) { return 0, errUserTimeoutUnsupported }
