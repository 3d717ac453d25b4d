//go:build linux || darwin || freebsd

package shm

import (
	"errors"
	"fmt"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// resourceError names the resource a failed system call ran out of, when
// it did: file descriptors, memory, memory mappings.
func resourceError(call string, err error) error {
	switch unwrapErrno(err) {
	case unix.EMFILE:
		return fmt.Errorf("%s: out of file descriptors (the process's RLIMIT_NOFILE): %w", call, err)
	case unix.ENFILE:
		return fmt.Errorf("%s: out of file descriptors (the system's limit): %w", call, err)
	case unix.ENOMEM:
		return fmt.Errorf("%s: out of memory or memory mappings: %w", call, err)
	}
	return os.NewSyscallError(call, err)
}

// unwrapErrno returns the system error err wraps, or err.
func unwrapErrno(err error) error {
	var errno syscall.Errno
	if errors.As(err, &errno) {
		return errno
	}
	return err
}
