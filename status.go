package nd

import "fmt"

// Status is an ND status code: the NTSTATUS value that ND reports through an
// HRESULT, at its ND numeric value. Status implements error, so an immediate
// error from a call and the Status of a completed Result are the same type:
// errors.Is(err, nd.ErrAccessViolation) works on both, and on errors that wrap
// them (see OpError).
//
// Success-class values (Success, Timeout, Pending) are also Statuses; callers
// must compare with Success rather than test the class, as ND consumers do.
type Status uint32

// Success-class and warning-class statuses.
const (
	Success Status = 0x00000000 // ND_SUCCESS
	Timeout Status = 0x00000102 // ND_TIMEOUT (success class in ND v1)
	Pending Status = 0x00000103 // ND_PENDING

	ErrBufferOverflow Status = 0x80000005 // ND_BUFFER_OVERFLOW (warning: buffer too small, or incoming Send too large)
	ErrDeviceBusy     Status = 0x80000011 // ND_DEVICE_BUSY (warning: a memory window is still bound)
	ErrNoMoreEntries  Status = 0x8000001A // ND_NO_MORE_ENTRIES (warning: queue depth reached)
)

// Error-class statuses.
const (
	ErrUnsuccessful             Status = 0xC0000001 // ND_UNSUCCESSFUL
	ErrAccessViolation          Status = 0xC0000005 // ND_ACCESS_VIOLATION
	ErrInvalidHandle            Status = 0xC0000008 // ND_INVALID_HANDLE
	ErrInvalidParameter         Status = 0xC000000D // ND_INVALID_PARAMETER
	ErrInvalidDeviceRequest     Status = 0xC0000010 // ND_INVALID_DEVICE_REQUEST
	ErrNoMemory                 Status = 0xC0000017 // ND_NO_MEMORY
	ErrInvalidParameterMix      Status = 0xC0000030 // ND_INVALID_PARAMETER_MIX
	ErrDataOverrun              Status = 0xC000003C // ND_DATA_OVERRUN
	ErrDataError                Status = 0xC000003E // STATUS_DATA_ERROR (seen in ND's tests, not an ND name)
	ErrSharingViolation         Status = 0xC0000043 // ND_SHARING_VIOLATION
	ErrInsufficientResources    Status = 0xC000009A // ND_INSUFFICIENT_RESOURCES
	ErrDeviceNotReady           Status = 0xC00000A3 // ND_DEVICE_NOT_READY
	ErrIOTimeout                Status = 0xC00000B5 // ND_IO_TIMEOUT
	ErrNotSupported             Status = 0xC00000BB // ND_NOT_SUPPORTED
	ErrBadNetworkName           Status = 0xC00000CC // STATUS_BAD_NETWORK_NAME (seen in ND's tests)
	ErrInternalError            Status = 0xC00000E5 // ND_INTERNAL_ERROR
	ErrInvalidParameter1        Status = 0xC00000EF // ND_INVALID_PARAMETER_1
	ErrInvalidParameter2        Status = 0xC00000F0 // ND_INVALID_PARAMETER_2
	ErrInvalidParameter3        Status = 0xC00000F1 // ND_INVALID_PARAMETER_3
	ErrInvalidParameter4        Status = 0xC00000F2 // ND_INVALID_PARAMETER_4
	ErrInvalidParameter5        Status = 0xC00000F3 // ND_INVALID_PARAMETER_5
	ErrInvalidParameter6        Status = 0xC00000F4 // ND_INVALID_PARAMETER_6
	ErrInvalidParameter7        Status = 0xC00000F5 // ND_INVALID_PARAMETER_7
	ErrInvalidParameter8        Status = 0xC00000F6 // ND_INVALID_PARAMETER_8
	ErrInvalidParameter9        Status = 0xC00000F7 // ND_INVALID_PARAMETER_9
	ErrInvalidParameter10       Status = 0xC00000F8 // ND_INVALID_PARAMETER_10
	ErrCanceled                 Status = 0xC0000120 // ND_CANCELED
	ErrRemoteError              Status = 0xC000013D // ND_REMOTE_ERROR
	ErrInvalidAddress           Status = 0xC0000141 // ND_INVALID_ADDRESS
	ErrInvalidDeviceState       Status = 0xC0000184 // ND_INVALID_DEVICE_STATE
	ErrInvalidBufferSize        Status = 0xC0000206 // ND_INVALID_BUFFER_SIZE
	ErrTooManyAddresses         Status = 0xC0000209 // ND_TOO_MANY_ADDRESSES
	ErrAddressAlreadyExists     Status = 0xC000020A // ND_ADDRESS_ALREADY_EXISTS
	ErrConnectionRefused        Status = 0xC0000236 // ND_CONNECTION_REFUSED
	ErrConnectionInvalid        Status = 0xC000023A // ND_CONNECTION_INVALID
	ErrConnectionActive         Status = 0xC000023B // ND_CONNECTION_ACTIVE
	ErrNetworkUnreachable       Status = 0xC000023C // ND_NETWORK_UNREACHABLE
	ErrHostUnreachable          Status = 0xC000023D // ND_HOST_UNREACHABLE
	ErrConnectionAborted        Status = 0xC0000241 // ND_CONNECTION_ABORTED
	ErrDeviceRemoved            Status = 0xC00002B6 // ND_DEVICE_REMOVED
	ErrAddressAlreadyAssociated Status = 0xC0000328 // STATUS_ADDRESS_ALREADY_ASSOCIATED (seen in ND's tests)
)

// The ND v1 names that are aliases of the values above.
const (
	ErrLocalLength       = ErrDataOverrun          // ND_LOCAL_LENGTH
	ErrInvalidationError = ErrInvalidDeviceRequest // ND_INVALIDATION_ERROR
	ErrInvalidRequest    = ErrInvalidDeviceRequest // ND_INVALID_REQUEST
	ErrFailure           = ErrInternalError        // ND_FAILURE
)

type statusText struct{ name, meaning string }

var statusTexts = map[Status]statusText{
	Success:                     {"ND_SUCCESS", "the operation succeeded"},
	Timeout:                     {"ND_TIMEOUT", "the operation timed out"},
	Pending:                     {"ND_PENDING", "the operation is in progress"},
	ErrBufferOverflow:           {"ND_BUFFER_OVERFLOW", "the buffer is too small for the data, or an incoming Send exceeded the posted Receive"},
	ErrDeviceBusy:               {"ND_DEVICE_BUSY", "a memory window is still bound to the memory region"},
	ErrNoMoreEntries:            {"ND_NO_MORE_ENTRIES", "the request would exceed the queue depth of the endpoint"},
	ErrUnsuccessful:             {"ND_UNSUCCESSFUL", "the operation failed"},
	ErrAccessViolation:          {"ND_ACCESS_VIOLATION", "the request referenced memory that is not registered, out of range, or not permitted"},
	ErrInvalidHandle:            {"ND_INVALID_HANDLE", "the handle is not valid"},
	ErrInvalidParameter:         {"ND_INVALID_PARAMETER", "a parameter is not valid"},
	ErrInvalidDeviceRequest:     {"ND_INVALID_DEVICE_REQUEST", "the request is malformed, or names a memory window that cannot be invalidated"},
	ErrNoMemory:                 {"ND_NO_MEMORY", "not enough memory"},
	ErrInvalidParameterMix:      {"ND_INVALID_PARAMETER_MIX", "the parameters are inconsistent"},
	ErrDataOverrun:              {"ND_DATA_OVERRUN", "the request has more scatter/gather entries or data than the endpoint allows"},
	ErrDataError:                {"STATUS_DATA_ERROR", "the peer could not accept the data"},
	ErrSharingViolation:         {"ND_SHARING_VIOLATION", "the address is in use"},
	ErrInsufficientResources:    {"ND_INSUFFICIENT_RESOURCES", "not enough resources"},
	ErrDeviceNotReady:           {"ND_DEVICE_NOT_READY", "the provider is not ready"},
	ErrIOTimeout:                {"ND_IO_TIMEOUT", "the connection or the peer failed to respond in time"},
	ErrNotSupported:             {"ND_NOT_SUPPORTED", "the operation is not supported"},
	ErrBadNetworkName:           {"STATUS_BAD_NETWORK_NAME", "no adapter serves the address"},
	ErrInternalError:            {"ND_INTERNAL_ERROR", "the endpoint failed while processing the request"},
	ErrInvalidParameter1:        {"ND_INVALID_PARAMETER_1", "parameter 1 is not valid"},
	ErrInvalidParameter2:        {"ND_INVALID_PARAMETER_2", "parameter 2 is not valid"},
	ErrInvalidParameter3:        {"ND_INVALID_PARAMETER_3", "parameter 3 is not valid"},
	ErrInvalidParameter4:        {"ND_INVALID_PARAMETER_4", "parameter 4 is not valid"},
	ErrInvalidParameter5:        {"ND_INVALID_PARAMETER_5", "parameter 5 is not valid"},
	ErrInvalidParameter6:        {"ND_INVALID_PARAMETER_6", "parameter 6 is not valid"},
	ErrInvalidParameter7:        {"ND_INVALID_PARAMETER_7", "parameter 7 is not valid"},
	ErrInvalidParameter8:        {"ND_INVALID_PARAMETER_8", "parameter 8 is not valid"},
	ErrInvalidParameter9:        {"ND_INVALID_PARAMETER_9", "parameter 9 is not valid"},
	ErrInvalidParameter10:       {"ND_INVALID_PARAMETER_10", "parameter 10 is not valid"},
	ErrCanceled:                 {"ND_CANCELED", "the request was canceled"},
	ErrRemoteError:              {"ND_REMOTE_ERROR", "the request caused an error at the peer"},
	ErrInvalidAddress:           {"ND_INVALID_ADDRESS", "the address is not served by this provider"},
	ErrInvalidDeviceState:       {"ND_INVALID_DEVICE_STATE", "the object is not in a state that allows the call"},
	ErrInvalidBufferSize:        {"ND_INVALID_BUFFER_SIZE", "the buffer size is not valid"},
	ErrTooManyAddresses:         {"ND_TOO_MANY_ADDRESSES", "no port is free"},
	ErrAddressAlreadyExists:     {"ND_ADDRESS_ALREADY_EXISTS", "the port is already in use"},
	ErrConnectionRefused:        {"ND_CONNECTION_REFUSED", "the peer refused the connection"},
	ErrConnectionInvalid:        {"ND_CONNECTION_INVALID", "the endpoint is not connected"},
	ErrConnectionActive:         {"ND_CONNECTION_ACTIVE", "the endpoint is already connected or connecting"},
	ErrNetworkUnreachable:       {"ND_NETWORK_UNREACHABLE", "the network is unreachable"},
	ErrHostUnreachable:          {"ND_HOST_UNREACHABLE", "the host is unreachable"},
	ErrConnectionAborted:        {"ND_CONNECTION_ABORTED", "the peer abandoned the connection"},
	ErrDeviceRemoved:            {"ND_DEVICE_REMOVED", "the adapter was closed or removed"},
	ErrAddressAlreadyAssociated: {"STATUS_ADDRESS_ALREADY_ASSOCIATED", "the local address is already in use by another connection"},
}

// Name returns the ND name of the status, such as "ND_ACCESS_VIOLATION", or
// "ND_STATUS_0x........" for a value ND does not name.
func (s Status) Name() string {
	if t, ok := statusTexts[s]; ok {
		return t.name
	}
	return fmt.Sprintf("ND_STATUS_%#08x", uint32(s))
}

// Error returns the ND name, the numeric value and the meaning of the status.
func (s Status) Error() string {
	t, ok := statusTexts[s]
	if !ok {
		return fmt.Sprintf("ND status %#08x", uint32(s))
	}
	return fmt.Sprintf("%s (%#08x): %s", t.name, uint32(s), t.meaning)
}

// Err returns nil for Success and the status itself otherwise, so that a
// completed Result can be checked with the usual `if err := r.Status.Err(); err != nil`.
func (s Status) Err() error {
	if s == Success {
		return nil
	}
	return s
}

// Failed reports whether the status is a warning or an error, as ND's FAILED()
// macro does: ErrBufferOverflow is a failure, Timeout and Pending are not.
func (s Status) Failed() bool { return s&0x80000000 != 0 }

// OpError is the error that control-path calls return when they can say more
// than a Status: which call failed, and the cause (for example the context's
// error when a call was canceled). errors.Is(err, nd.ErrCanceled) and
// errors.Is(err, context.Canceled) both hold for a canceled call. Its
// methods only read it: safe for concurrent use once made.
type OpError struct {
	Op     string // the ND call, such as "Connect"
	Status Status // the ND status
	Err    error  // the underlying cause, or nil
}

// Error describes the failed call, its ND status and its cause.
func (e *OpError) Error() string {
	if e.Err == nil {
		return "nd: " + e.Op + ": " + e.Status.Error()
	}
	return "nd: " + e.Op + ": " + e.Status.Error() + ": " + e.Err.Error()
}

// Unwrap returns the Status and the cause.
func (e *OpError) Unwrap() []error {
	if e.Err == nil {
		return []error{e.Status}
	}
	return []error{e.Status, e.Err}
}

// StatusOf returns the ND status an error carries: Success for nil, the
// Status itself or the one wrapped in it, and ErrUnsuccessful for any other
// error.
func StatusOf(err error) Status {
	if err == nil {
		return Success
	}
	for {
		switch e := err.(type) {
		case Status:
			return e
		case *OpError:
			return e.Status
		case *ArgError:
			return e.Status
		case *DisconnectError:
			return e.Status
		case *resultError:
			return e.status
		}
		u, ok := err.(interface{ Unwrap() error })
		if !ok {
			return ErrUnsuccessful
		}
		err = u.Unwrap()
		if err == nil {
			return ErrUnsuccessful
		}
	}
}
