// Package ndrules holds the parameter and state checks that every nd
// provider applies the same way: the engine (and so the loop, tcp and shm
// transports) and provider/verbs call these functions instead of writing the
// rules again, so that a call gives the same status whatever the provider.
//
// Each function states the ND rule it applies, in the order ND's documents
// and docs/semantics.md give: when several parameters are wrong, the first
// failing check decides the status. The checks of posting calls and of
// state return a bare nd.Status (nd.Success when the call may go on) and
// allocate nothing; the checks of the other calls' arguments return nil or
// the error the call returns, an *nd.ArgError naming the Go argument (Arg
// builds one for the checks a provider makes itself). The functions read
// their arguments only and are safe for concurrent use. What a provider
// must find out for itself (whether a handle is one of its own, whether a
// buffer lies inside a registration) is passed in as a bool.
package ndrules
