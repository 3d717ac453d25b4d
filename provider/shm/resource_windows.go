package shm

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/windows"
)

// resourceError names the resource a failed system call ran out of, when
// it did: handles or memory.
func resourceError(call string, err error) error {
	switch {
	case errors.Is(err, windows.ERROR_NO_SYSTEM_RESOURCES), errors.Is(err, windows.ERROR_TOO_MANY_OPEN_FILES):
		return fmt.Errorf("%s: out of handles or system resources: %w", call, err)
	case errors.Is(err, windows.ERROR_NOT_ENOUGH_MEMORY), errors.Is(err, windows.ERROR_OUTOFMEMORY), errors.Is(err, windows.ERROR_COMMITMENT_LIMIT):
		return fmt.Errorf("%s: out of memory: %w", call, err)
	}
	return os.NewSyscallError(call, err)
}
