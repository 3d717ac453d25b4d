package ndrules

import "github.com/godirect/nd"

// Outbound names the outbound request whose parameters Post checks.
type Outbound uint8

// The outbound requests that carry a scatter/gather list.
const (
	Send Outbound = iota
	SendAndInvalidate
	Read
	Write
)

// flagsParam is the ND position of each request's Flags parameter.
var flagsParam = [...]nd.Status{
	Send:              nd.ErrInvalidParameter4, // pResult, pSgl, nSge, Flags
	SendAndInvalidate: nd.ErrInvalidParameter5, // ..., pRemoteMwDescriptor, Flags
	Read:              nd.ErrInvalidParameter6, // ..., pRemoteMwDescriptor, Offset, Flags
	Write:             nd.ErrInvalidParameter6,
}

// allowedFlags is what each request may carry: SEND_AND_SOLICIT_EVENT only
// on Sends.
var allowedFlags = [...]nd.Flags{
	Send:              nd.FlagSilentSuccess | nd.FlagReadFence | nd.FlagSendAndSolicitEvent,
	SendAndInvalidate: nd.FlagSilentSuccess | nd.FlagReadFence | nd.FlagSendAndSolicitEvent,
	Read:              nd.FlagSilentSuccess | nd.FlagReadFence,
	Write:             nd.FlagSilentSuccess | nd.FlagReadFence,
}

// PostLimits are the endpoint's and adapter's limits a posted list is held
// to.
type PostLimits struct {
	MaxSGE    int // the endpoint's SGE limit for the direction
	MaxLength int // the adapter's MaxOutboundLength or MaxInboundLength
	MaxInline int // inline bytes the endpoint takes (outbound only)
}

// Post checks the parameters of an outbound request, in ND's order: flags
// the request does not take (ErrInvalidParameterN, N the position of
// Flags), a nil Result (ErrInvalidParameter1), more entries than the
// endpoint's outbound SGE limit (ErrDataOverrun), more bytes than the
// adapter's MaxOutboundLength or more inline bytes (entries without a
// region) than the endpoint takes (ErrBufferOverflow). A Read's entries are
// its sink: inline bytes do not count there (they are a bad local entry,
// reported by the request's completion). It returns the list's byte count.
func Post(op Outbound, res *nd.Result, sgl []nd.SGE, flags nd.Flags, lim PostLimits) (int, nd.Status) {
	if flags&^allowedFlags[op] != 0 {
		return 0, flagsParam[op]
	}
	if res == nil {
		return 0, nd.ErrInvalidParameter1
	}
	if len(sgl) > lim.MaxSGE {
		return 0, nd.ErrDataOverrun
	}
	total, inline := 0, 0
	for i := range sgl {
		n := len(sgl[i].Buffer)
		total += n
		if sgl[i].Region == nil && op != Read {
			inline += n
		}
	}
	if total > lim.MaxLength || inline > lim.MaxInline {
		return 0, nd.ErrBufferOverflow
	}
	return total, nd.Success
}

// Receive checks the parameters of a Receive, posted to an endpoint or to a
// shared receive queue: a nil Result (ErrInvalidParameter1), more entries
// than the queue's inbound SGE limit (ErrDataOverrun), more bytes than the
// adapter's MaxInboundLength (ErrBufferOverflow). It returns the list's
// byte count. An entry outside its registration is accepted: the Receive
// completes ErrAccessViolation.
func Receive(res *nd.Result, sgl []nd.SGE, lim PostLimits) (int, nd.Status) {
	if res == nil {
		return 0, nd.ErrInvalidParameter1
	}
	if len(sgl) > lim.MaxSGE {
		return 0, nd.ErrDataOverrun
	}
	total := 0
	for i := range sgl {
		total += len(sgl[i].Buffer)
	}
	if total > lim.MaxLength {
		return 0, nd.ErrBufferOverflow
	}
	return total, nd.Success
}

// bindOther is what Bind and Invalidate take besides the rights.
const bindOther = nd.FlagSilentSuccess | nd.FlagReadFence

// Bind checks Bind's parameters in ND's order: a nil Result
// (ErrInvalidParameter1); a region that is not a live registration of the
// adapter (regionOK false: ErrAccessViolation, Bind's immediate status for a
// bad region); a window that is not an open window of the adapter (windowOK
// false: ErrInvalidParameter3); a buffer not inside the region (inRegion
// false: ErrInvalidParameter4); flags without FlagAllowRead or
// FlagAllowWrite, or with flags Bind does not take (ErrInvalidParameter6).
func Bind(res *nd.Result, regionOK, windowOK, inRegion bool, flags nd.Flags) nd.Status {
	rights := flags & (nd.FlagAllowRead | nd.FlagAllowWrite)
	switch {
	case res == nil:
		return nd.ErrInvalidParameter1
	case !regionOK:
		return nd.ErrAccessViolation
	case !windowOK:
		return nd.ErrInvalidParameter3
	case !inRegion:
		return nd.ErrInvalidParameter4
	case rights == 0 || flags&^(rights|bindOther) != 0:
		return nd.ErrInvalidParameter6
	}
	return nd.Success
}

// Invalidate checks Invalidate's parameters: a nil Result
// (ErrInvalidParameter1), a window that is not an open window of the
// adapter (windowOK false: ErrInvalidParameter2), flags other than
// FlagSilentSuccess and FlagReadFence (ErrInvalidParameter3).
func Invalidate(res *nd.Result, windowOK bool, flags nd.Flags) nd.Status {
	switch {
	case res == nil:
		return nd.ErrInvalidParameter1
	case !windowOK:
		return nd.ErrInvalidParameter2
	case flags&^bindOther != 0:
		return nd.ErrInvalidParameter3
	}
	return nd.Success
}

// Admit is the last check of a post, made under the endpoint's lock: an
// outbound request on an endpoint that is not connected (connected false;
// after the connection ended it is true: the request is accepted and
// completes ErrCanceled) is ErrConnectionInvalid, and a request beyond the
// queue's depth (full) is ErrNoMoreEntries. Receives may be posted before
// the connection (outbound false).
func Admit(outbound, connected, full bool) nd.Status {
	switch {
	case outbound && !connected:
		return nd.ErrConnectionInvalid
	case full:
		return nd.ErrNoMoreEntries
	}
	return nd.Success
}
