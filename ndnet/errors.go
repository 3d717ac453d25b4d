package ndnet

import (
	"errors"
	"fmt"
	"net"
)

// Errors a Conn reports, wrapped in a *net.OpError.
var (
	// ErrConnReset: the connection ended without the peer's orderly
	// shutdown (the peer died, or the transport failed); bytes the peer
	// wrote may be lost.
	ErrConnReset = errors.New("ndnet: connection reset by peer")
	// ErrBrokenPipe: the peer closed its reading side, so Write has no
	// reader.
	ErrBrokenPipe = errors.New("ndnet: broken pipe: the peer closed the connection")
	// ErrWriteShutdown: Write after CloseWrite.
	ErrWriteShutdown = errors.New("ndnet: write after CloseWrite")
	// ErrProtocol: the peer broke the protocol (a forged credit, an
	// oversized frame, a malformed frame); the connection is ended.
	ErrProtocol = errors.New("ndnet: protocol violation by the peer")
)

// protocolError is an ErrProtocol with its detail.
type protocolError struct{ detail error }

func (e *protocolError) Error() string { return ErrProtocol.Error() + ": " + e.detail.Error() }
func (e *protocolError) Unwrap() []error {
	return []error{ErrProtocol, e.detail}
}

// errSourceAbandoned ends a connection whose Write gave up (its deadline,
// Close) on RDMA Writes from its caller's buffer that the peer has not
// taken.
var errSourceAbandoned = fmt.Errorf("%w: a Write gave up on bytes the peer had not taken from its buffer", ErrConnReset)

// violation makes a protocolError from a description.
func violation(s string) error { return &protocolError{errors.New(s)} }

// opError wraps err the way package net does.
func (c *Conn) opError(op string, err error) error {
	return &net.OpError{Op: op, Net: c.local.Network(), Source: c.local, Addr: c.remote, Err: err}
}
