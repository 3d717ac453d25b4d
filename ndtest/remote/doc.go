// Package remote runs one side of the ndtest conformance suite in another
// process (or network namespace, or machine), without changing the suite.
//
// The suite drives both ends of every connection itself. A child process
// runs Serve with a real provider; the parent opens a Client on the
// connection to it and builds a provider with Split: one address is served
// by a local provider in the parent, the other by the child, whose adapters
// the parent uses through proxies that forward every call. The suite then
// runs unchanged over the split provider, and its connections cross the
// process boundary over the real transport.
//
// The proxies keep the nd contracts: errors keep their exact nd.Status
// (statuses cross as numbers), canceling a context cancels the call in the
// child (and the error is still nd.ErrCanceled), GetResults hands back the
// caller's own *nd.Result pointers, and a blocking call looks blocked to an
// observer exactly when it is blocked in the child's provider. Registered
// memory is kept in step by comparing shadow copies in 4 KiB chunks at
// every call (see SplitProvider).
//
// Calls travel over any io.ReadWriteCloser (a pipe to the child's
// stdin/stdout, say) as length-prefixed frames, multiplexed by request id.
package remote
