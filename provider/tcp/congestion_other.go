//go:build !linux

package tcp

import "errors"

// congestionSupported: the socket's congestion control can be chosen.
const congestionSupported = false

var errCongestionUnsupported = errors.New("choosing a congestion control is supported on Linux only")

func setCongestion(uintptr, string) error { return errCongestionUnsupported }

func congestionOf(uintptr) (string, error) { return "", errCongestionUnsupported }
