package ndexport

import (
	"github.com/godirect/nd"
	"github.com/godirect/nd/internal/ndabi"
)

// File is an overlapped file as ND hands it to the consumer: the adapter's
// (ND v1's GetFileHandle) or one of CreateOverlappedFile's (ND v2). The
// consumer may bind it to an I/O completion port; the overlapped requests of
// the objects created with it complete through it. Its methods are safe for
// concurrent use.
type File interface {
	// Handle is the handle the consumer gets.
	Handle() uintptr
	// Complete completes the consumer's request ov with st: ov's event is
	// set (unless it is 0), a packet with ov goes to the completion port
	// bound to the file (unless the event's lowest bit is set), with
	// STATUS_SUCCESS when st is of the success class and STATUS_CANCELLED
	// otherwise. It returns once nothing will write ov any more.
	Complete(ov *ndabi.Overlapped, st nd.Status)
	// Close closes the provider's side of the file, and the consumer's
	// handle too when handle is true (ND v1's adapter file, which the
	// consumer never owns; ND v2's CreateOverlappedFile hands its handle
	// over to the consumer).
	Close(handle bool)
}

// NewFile makes an overlapped file. It is the platform's: on Windows a
// pipe whose reads the kernel completes with the consumer's OVERLAPPED, on
// other systems MemoryFile.
var NewFile = newPlatformFile

// succeeded reports whether st is of the success class (SUCCEEDED in C:
// ND_SUCCESS, ND_TIMEOUT, ND_PENDING).
func succeeded(st nd.Status) bool { return int32(st) >= 0 }

// statusCancelled is the NTSTATUS of a completion of the failure class.
const statusCancelled = uintptr(nd.ErrCanceled)
