//go:build windows && (amd64 || arm64)

package ndspi

import (
	"syscall"
	"unsafe"

	"github.com/godirect/nd"
	"github.com/godirect/nd/internal/ndabi"
)

// com is a COM interface pointer of an ND provider: the address of an
// object whose first word is the address of its table of methods. A method
// is called through its slot in the table (internal/ndabi names every
// slot), with the object first; it returns an HRESULT, which is the ND
// status itself (nd.Status), or a count or token for the few methods that
// return one.
//
// Why these calls are sound. syscall.SyscallN runs the provider's function
// on the system stack with the arguments as plain words; the provider
// keeps none of them past the call except where ND says it may (an
// OVERLAPPED until its request completes, an ND v1 ND_RESULT until its
// completion is reaped, a registered buffer until it is deregistered). So
// every word that addresses memory addresses one of three kinds, none of
// which the Go runtime moves or frees under the provider:
//
//   - the provider's own memory (objects, tables);
//   - memory outside the Go heap that this package allocates (cmem:
//     OVERLAPPEDs, ND_RESULTs, scatter/gather arrays, inline bytes,
//     sockaddrs, private data, out parameters), freed only once the
//     provider is done with it;
//   - the caller's registered buffers, pinned (runtime.Pinner) from before
//     their registration until after their deregistration, and Go globals
//     (the interface identifiers), which never move.
//
// A scatter/gather entry may name bytes outside its registration (the
// caller's mistake, which the provider reports as ND_ACCESS_VIOLATION
// without touching them): there the provider gets the number only. No Go
// pointer is stored in memory the provider reads: addresses are written
// there as integers.
type com uintptr

const wordSize = unsafe.Sizeof(uintptr(0))

// at is the memory at address a, which is not the Go heap's (see com).
func at(a uintptr) unsafe.Pointer { return unsafe.Add(unsafe.Pointer(nil), a) }

// method is the function in slot of o's table.
func (o com) method(slot int) uintptr {
	vtbl := *(*uintptr)(at(uintptr(o)))
	return *(*uintptr)(at(vtbl + uintptr(slot)*wordSize))
}

// raw calls the method in slot with o and args and returns what it
// returns, a whole word (a count, a token, a handle).
func (o com) raw(slot int, args ...uintptr) uintptr {
	var a [16]uintptr
	a[0] = uintptr(o)
	n := copy(a[1:], args)
	r, _, _ := syscall.SyscallN(o.method(slot), a[:n+1]...)
	return r
}

// call calls the method in slot with o and args and returns its HRESULT
// as an ND status.
func (o com) call(slot int, args ...uintptr) nd.Status {
	return nd.Status(uint32(o.raw(slot, args...)))
}

// release is IUnknown::Release.
func (o com) release() {
	if o != 0 {
		o.raw(ndabi.SlotRelease)
	}
}

// guidArg is the address of an interface identifier of package ndabi: a Go
// global, which never moves.
func guidArg(g *ndabi.GUID) uintptr { return uintptr(unsafe.Pointer(g)) }
