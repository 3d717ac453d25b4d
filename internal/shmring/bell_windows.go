package shmring

import (
	"errors"
	"sync"

	"golang.org/x/sys/windows"
)

// Doorbell is a Windows auto-reset event used as a Bell and a Waiter:
// Ring sets it, Wait blocks an OS thread in WaitForSingleObject until it
// is set (the Go runtime gives the thread's processor to other goroutines
// meanwhile). The peer process gets its own handle to the same event with
// DuplicateHandle. Ring and Wait may run concurrently with each other and
// with Close; one goroutine at a time may Wait.
type Doorbell struct {
	h windows.Handle

	mu      sync.Mutex
	closed  bool
	waiting bool // a Wait holds the handle: it closes it if Close came
}

// ErrClosed is what Wait returns once the doorbell is closed.
var ErrClosed = errors.New("shmring: doorbell closed")

// NewDoorbell creates an event doorbell.
func NewDoorbell() (*Doorbell, error) {
	h, err := windows.CreateEvent(nil, 0, 0, nil)
	if err != nil {
		return nil, err
	}
	return &Doorbell{h: h}, nil
}

// ErrNotEvent: a handle that should be an event is something else.
var ErrNotEvent = errorString("shmring: handle is not an event")

// DoorbellFromHandle makes a doorbell of h, which must be an event handle
// (one received from a peer is checked: it must accept being set); the
// Doorbell owns h from then on, also when it returns an error (h is then
// closed).
func DoorbellFromHandle(h windows.Handle) (*Doorbell, error) {
	// Setting an object that is not an event fails; a set event makes
	// the first Wait return at once, which a Waiter allows.
	if err := windows.SetEvent(h); err != nil {
		windows.CloseHandle(h)
		return nil, ErrNotEvent
	}
	return &Doorbell{h: h}, nil
}

// Ring implements Bell. A closed doorbell ignores it.
func (d *Doorbell) Ring() {
	d.mu.Lock()
	if !d.closed {
		windows.SetEvent(d.h)
	}
	d.mu.Unlock()
}

// Wait implements Waiter: it blocks until the doorbell was rung since the
// last Wait, or returns ErrClosed once the doorbell is closed.
func (d *Doorbell) Wait() error {
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		return ErrClosed
	}
	d.waiting = true
	d.mu.Unlock()
	ev, err := windows.WaitForSingleObject(d.h, windows.INFINITE)
	d.mu.Lock()
	defer d.mu.Unlock()
	d.waiting = false
	if d.closed {
		windows.CloseHandle(d.h)
		return ErrClosed
	}
	if err != nil {
		return err
	}
	if ev != windows.WAIT_OBJECT_0 {
		return errors.New("shmring: doorbell wait failed")
	}
	return nil
}

// Handle returns the event's handle, to duplicate into the peer. It stays
// owned by d.
func (d *Doorbell) Handle() windows.Handle { return d.h }

// Close closes the event; a Wait in progress returns ErrClosed (Close sets
// the event to wake it, and the Wait closes the handle).
func (d *Doorbell) Close() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return nil
	}
	d.closed = true
	if d.waiting {
		return windows.SetEvent(d.h)
	}
	return windows.CloseHandle(d.h)
}
