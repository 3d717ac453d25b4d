//go:build unix && (!linux || shmportable)

package shmring

// Doorbell is the doorbell of the Unix systems without eventfd: a pipe
// (see PipeBell).
type Doorbell = PipeBell

// NewDoorbell creates a pipe doorbell.
func NewDoorbell() (*Doorbell, error) { return NewPipeBell() }
