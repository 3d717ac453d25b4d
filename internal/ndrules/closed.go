package ndrules

import "github.com/godirect/nd"

// Closed is the status of a call on an object after the object or its
// adapter closed (docs/semantics.md, "What a later call returns"):
// ErrDeviceRemoved once the adapter closed, ErrInvalidHandle when the object
// itself (or an object it depends on) closed, Success otherwise.
func Closed(adapterClosed, objectClosed bool) nd.Status {
	switch {
	case adapterClosed:
		return nd.ErrDeviceRemoved
	case objectClosed:
		return nd.ErrInvalidHandle
	}
	return nd.Success
}
