package nd

// ArgError is the error of a call that refused one of its arguments: a
// blocking or creating call (Listen, Connect, CreateEndpoint,
// RegisterMemory and the like) whose argument is out of range, of another
// adapter, closed, or too long. Arg names the argument as the Go call
// spells it; Status is the status ND gives the refusal, unchanged, so that
// errors.Is(err, nd.ErrInvalidParameter4) and StatusOf keep working.
//
// ND numbers its parameters by their position in the C method: Connect's
// protocol is ND_INVALID_PARAMETER_4 (INDConnector::Connect's fourth
// parameter, after the endpoint, the address and the address length),
// although it is the Go call's third argument. Arg says which one it was;
// Status keeps ND's number for code that follows ND's documentation.
//
// Posting calls (Send, Receive, Read, Write, Bind, Invalidate and a shared
// receive queue's Receive) return bare Statuses instead, so that their
// errors cost no allocation; their method documentation names the argument
// each status stands for. Its methods only read it: safe for concurrent use
// once made.
type ArgError struct {
	Op     string // the call, such as "Connect"
	Arg    string // the argument, such as "protocol" or "limits.OutboundSGE"
	Status Status // ND's status for the refusal, such as ErrInvalidParameter4
	Reason string // what is wrong with the argument, such as "300 is outside 0..255"; may be empty
}

// Error names the call, the argument and what is wrong with it, then ND's
// status: "nd: Connect: protocol: 300 is outside 0..255
// (ND_INVALID_PARAMETER_4)".
func (e *ArgError) Error() string {
	reason := e.Reason
	if reason == "" {
		reason = "not valid"
	}
	return "nd: " + e.Op + ": " + e.Arg + ": " + reason + " (" + e.Status.Name() + ")"
}

// Unwrap returns Status.
func (e *ArgError) Unwrap() error { return e.Status }
