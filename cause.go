package nd

import "strconv"

// Cause says more about a failure than its Status: which side's memory an
// ND_ACCESS_VIOLATION was about, why the peer's request ended the
// connection. ND gives every access failure the one status
// ErrAccessViolation; a Cause beside it keeps that value and still lets a
// program tell a bug in its own scatter/gather lists from a descriptor the
// peer did not honour, as verbs' IBV_WC_LOC_PROT_ERR and
// IBV_WC_REM_ACCESS_ERR do. A Cause is an error, so errors.Is(err,
// nd.CauseRemoteAccess) holds for the error of Result.Err and for the
// *DisconnectError of DisconnectReason that carry it.
type Cause uint8

// The causes. Result.Cause is one of the first three; a *DisconnectError
// may carry any.
const (
	// CauseNone: nothing more is known than the Status.
	CauseNone Cause = iota
	// CauseLocalAccess: a scatter/gather entry of the request lies outside
	// its registration, names a region that is deregistered or of another
	// adapter, or is inline data where bytes must be placed (a Receive, a
	// Read's destination). The request never reached the peer's memory.
	CauseLocalAccess
	// CauseRemoteAccess: the peer refused this side's Read or Write: the
	// descriptor's token names no window or remote access of the peer that
	// serves this connection (never bound, invalidated, bound on another
	// connection), or the range or the rights do not fit it. The peer
	// learns it as CausePeerAccess.
	CauseRemoteAccess
	// CausePeerAccess (DisconnectReason only): this side refused a Read or
	// Write of the peer, for a reason of CauseRemoteAccess, and ended the
	// connection.
	CausePeerAccess
	// CauseNoReceive (DisconnectReason only): a Send of the peer found no
	// Receive posted (on the endpoint, or on its shared receive queue),
	// and this side ended the connection.
	CauseNoReceive
)

var causeTexts = [...]string{
	CauseNone:         "no cause known",
	CauseLocalAccess:  "local access: a scatter/gather entry of this side is outside its registration, of a deregistered region or another adapter's, or inline where bytes are placed",
	CauseRemoteAccess: "remote access: the peer refused the Read or Write: its token, range or rights name nothing the peer opened to this connection",
	CausePeerAccess:   "peer access: this side refused the peer's Read or Write: its token, range or rights name nothing this side opened to that connection",
	CauseNoReceive:    "no Receive: the peer's Send found no Receive posted",
}

var causeNames = [...]string{
	CauseNone:         "CauseNone",
	CauseLocalAccess:  "CauseLocalAccess",
	CauseRemoteAccess: "CauseRemoteAccess",
	CausePeerAccess:   "CausePeerAccess",
	CauseNoReceive:    "CauseNoReceive",
}

// String returns the constant's name, such as "CauseRemoteAccess".
func (c Cause) String() string {
	if int(c) < len(causeNames) {
		return causeNames[c]
	}
	return "Cause(" + strconv.Itoa(int(c)) + ")"
}

// Error says what the cause means.
func (c Cause) Error() string {
	if int(c) < len(causeTexts) {
		return causeTexts[c]
	}
	return c.String()
}

// resultError is Result.Err's error for a failure with a Cause.
type resultError struct {
	status Status
	cause  Cause
}

func (e *resultError) Error() string { return e.status.Error() + ": " + e.cause.Error() }

func (e *resultError) Unwrap() []error { return []error{e.status, e.cause} }
