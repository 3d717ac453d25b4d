package nd

// DisconnectError says why a connection ended; DisconnectReason returns
// it. Both sides learn a reason: the side whose request failed from that
// request, the other side from what it refused or from the peer's end. The
// Status and Cause are those the failure carried, unchanged, and
// errors.Is(err, nd.ErrAccessViolation), errors.Is(err,
// nd.CausePeerAccess) and StatusOf work on it.
//
// The reasons, by Peer and Op:
//
//   - Peer false, Op "Disconnect", "Close" or "Flush", Status Success: this
//     side ended the connection by that call ("Close" of the connector,
//     the endpoint, a queue it uses, or the adapter).
//   - Peer false, Op a request ("Send", "SendAndInvalidate", "Receive",
//     "Read", "Write", "Bind", "Invalidate"): a request of this side
//     completed with Status (and Cause), and the error ended the
//     connection.
//   - Peer false, Op "CompletionQueue", Status ErrBufferOverflow: a
//     completion queue of the endpoint overran.
//   - Peer true, Op "Send", "Read" or "Write": this side refused that
//     request of the peer and ended the connection: Cause CauseNoReceive
//     (Status ErrBufferOverflow) for a Send that found no Receive,
//     CausePeerAccess (Status ErrAccessViolation, Detail saying what the
//     access named) for a Read or Write. A Send larger than the Receive it
//     found is the Receive's failure instead (Peer false, Op "Receive").
//   - Peer true, Op "", Status Success: the peer ended the connection, by
//     its Disconnect or Close, or its process ended.
//   - Peer true, Op "", another Status: the peer or the connection failed:
//     ErrIOTimeout for a peer that stopped answering, the status of the
//     peer's failed request, ErrRemoteError for traffic that broke the
//     protocol.
//
// Its methods only read it: safe for concurrent use once made.
type DisconnectError struct {
	Peer   bool   // the peer, or the connection under it, ended it; false: this side did
	Op     string // the call or request that ended it, of this side or (Peer) of the peer; "" when the peer ended it otherwise
	Status Status // the status of the end: Success for a deliberate end, else the failure's
	Cause  Cause  // more about Status, as Result.Cause, or CausePeerAccess, CauseNoReceive
	Detail string // more about Cause when the provider knows it, such as "no window has the token"; may be empty
}

// Error says who ended the connection, by what, and the status and cause.
func (e *DisconnectError) Error() string {
	s := "nd: the connection was ended by "
	switch {
	case e.Op == "" && e.Status == Success:
		return s + "the peer (its Disconnect or Close, or the end of its process)"
	case e.Op == "":
		s += "the peer or the connection: " + e.Status.Error()
	case e.Peer:
		s += "the peer's " + e.Op + ", which this side refused: " + e.Status.Error()
	case e.Status == Success:
		return s + "this side's " + e.Op
	default:
		s += "this side's " + e.Op + ", which failed: " + e.Status.Error()
	}
	if e.Cause != CauseNone {
		s += ": " + e.Cause.Error()
	}
	if e.Detail != "" {
		s += " (" + e.Detail + ")"
	}
	return s
}

// Unwrap returns the Status, unless it is Success, and the Cause, unless
// it is CauseNone.
func (e *DisconnectError) Unwrap() []error {
	var errs []error
	if e.Status != Success {
		errs = append(errs, e.Status)
	}
	if e.Cause != CauseNone {
		errs = append(errs, e.Cause)
	}
	return errs
}

// DisconnectReasoner is what a Connector implements when it records why
// its connection ended (loop, tcp and shm do). Use DisconnectReason, which
// reports ErrNotSupported for a connector without it. Its method is safe
// for concurrent use, as the Connector's are.
type DisconnectReasoner interface {
	// DisconnectReason returns a *DisconnectError once the connection
	// ended (NotifyDisconnect returned, or would return at once), and nil
	// while it is up or before it was made. The reason is the first thing
	// that ended the connection; it does not change afterwards, and it
	// stays readable after Close. Safe for concurrent use.
	DisconnectReason() error
}

// DisconnectReason returns why c's connection ended: a *DisconnectError
// once it ended, nil while it is up or before it was made, and
// ErrNotSupported when c's provider does not record it. Typically called
// after NotifyDisconnect returns:
//
//	if err := conn.NotifyDisconnect(ctx); err == nil {
//		log.Print(nd.DisconnectReason(conn)) // "nd: the connection was ended by the peer's Write, which this side refused: ..."
//	}
func DisconnectReason(c Connector) error {
	r, ok := c.(DisconnectReasoner)
	if !ok {
		return ErrNotSupported
	}
	return r.DisconnectReason()
}
