// Package ndtest is the conformance suite for nd providers, like
// golang.org/x/net/nettest for net.Conn: Run checks, with exact statuses and
// bytes, that a provider behaves as the nd package documents.
//
//	func TestConformance(t *testing.T) { ndtest.Run(t, myprovider.New()) }
//
// Every case is a named subtest, so one case can be run with
// -run 'TestConformance/Send/ZeroByte'.
package ndtest

import (
	"testing"

	"github.com/godirect/nd"
)

// Run runs the whole suite against p. p must serve at least one address and
// allow two adapters opened on its addresses to connect to each other.
func Run(t *testing.T, p nd.Provider) {
	t.Run("Adapter", func(t *testing.T) { runAdapter(t, p) })
	t.Run("CreateEndpoint", func(t *testing.T) { runCreateEndpoint(t, p) })
	t.Run("Connection", func(t *testing.T) { runConnection(t, p) })
	t.Run("CQ", func(t *testing.T) { runCQ(t, p) })
	t.Run("Send", func(t *testing.T) { runSend(t, p) })
	t.Run("Receive", func(t *testing.T) { runReceive(t, p) })
	t.Run("Read", func(t *testing.T) { runRead(t, p) })
	t.Run("Write", func(t *testing.T) { runWrite(t, p) })
	t.Run("Memory", func(t *testing.T) { runMemory(t, p) })
	t.Run("Teardown", func(t *testing.T) { runTeardown(t, p) })
	t.Run("SharedCQ", func(t *testing.T) { runSharedCQ(t, p) })
	t.Run("SRQ", func(t *testing.T) { runSRQ(t, p) })
	t.Run("Lifecycle", func(t *testing.T) { runLifecycle(t, p) })
	t.Run("Errors", func(t *testing.T) { runErrors(t, p) })
}
