//go:build darwin || freebsd || (linux && shmportable)

package shm

import (
	"errors"
	"runtime"

	"github.com/godirect/nd"
)

// On macOS and FreeBSD a process cannot read or write another's memory
// without being its debugger (macOS: task_for_pid, which needs an
// entitlement; FreeBSD: ptrace), so the transport has no one-sided copy
// by address there: every connection's probe fails, each side announces
// no capabilities, and Reads, Writes and large Sends go through the rings
// (ring mode), except for copies into windows over AllocateMemory
// segments, which the peer maps (segpass_posix.go). Linux with the build
// tag shmportable runs the same code, to test it.

// remoteIovec is a range of the peer's memory (the fields are Linux's).
type remoteIovec struct {
	Base uintptr
	Len  int
}

// iovec is the local side's scratch entry, which no copy uses here.
type iovec struct{}

// errNoProcessMemory is why there is no one-sided copy by address here.
var errNoProcessMemory = errors.New("another process's memory is not accessible on " + runtime.GOOS)

// probePeer fails: the peer's memory cannot be read.
func probePeer(p peerProc, addr uint64, want []byte) error { return errNoProcessMemory }

// The one-sided copy as OneSidedMode names it.
const (
	copyCall = "process memory"
	copyMode = "none"
)

// selfProbe fails: OneSidedMode reports ring mode.
func selfProbe() error { return errNoProcessMemory }

// pvmCopy is never called (no probe succeeds); it fails.
func pvmCopy(p peerProc, local []byte, remote []remoteIovec, write bool, _ *[1]iovec) error {
	return errNoProcessMemory
}

// pvmPull is never called (no probe succeeds); it fails.
func pvmPull(p peerProc, sgl []nd.SGE, off, n int, remote []remoteIovec, liov *[maxIovs]iovec) error {
	return errNoProcessMemory
}

// pvmSGL is never called (no probe succeeds); it fails.
func pvmSGL(p peerProc, sgl []nd.SGE, off, n int, remote []remoteIovec, _ *[maxIovs]iovec, write bool) error {
	return errNoProcessMemory
}
