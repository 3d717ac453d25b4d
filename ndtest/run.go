// Package ndtest is the conformance suite for nd providers, like
// golang.org/x/net/nettest for net.Conn: Run checks, with exact statuses and
// bytes, that a provider behaves as the nd package documents.
//
//	func TestConformance(t *testing.T) { ndtest.Run(t, myprovider.New()) }
//
// Every case is a named subtest, so one case can be run with
// -run 'TestConformance/Send/ZeroByte'.
//
// The suite is a table of ND's contracts: one group per interface
// (suite, in this file), and in each group's file a table of its cases,
// each citing the row of docs/semantics.md that states the rule it checks,
// followed by the cases' functions.
package ndtest

import (
	"slices"
	"testing"

	"github.com/godirect/nd"
)

// testCase is one entry of the suite's table: a contract of ND and the
// function that checks it.
type testCase struct {
	// Name is the subtest's name under its group; it may hold "/"
	// ("Listen/InvalidProtocol"), which go test splits into levels.
	Name string
	// Rule cites the row of docs/semantics.md that states what the case
	// checks, then gives the rule in a few words:
	//
	//	docs/semantics.md "<case>": <the rule>
	//
	// where <case> is the text of the row's first cell without its
	// backticks ("queue depth", "GetResults" for "`GetResults`"). The
	// page is in the repository, so a rule cites nothing a clone lacks;
	// internal/docscheck checks that every cited row exists.
	Rule string
	// Run checks the rule against p; it may run subtests of its own.
	Run func(t *testing.T, p nd.Provider)
}

// group is the suite's cases for one interface of ND.
type group struct {
	Name  string // the subtest's name under Run
	Cases []testCase
}

// suite is every case Run runs, by group, in order.
var suite = []group{
	{"Adapter", adapterCases},
	{"CreateEndpoint", createEndpointCases},
	{"Connection", slices.Concat(connectionCases, listenerCases, connectionMisuseCases, connectionScaleCases)},
	{"CQ", cqCases},
	{"Send", sendCases},
	{"Receive", receiveCases},
	{"Read", readCases},
	{"Write", writeCases},
	{"Memory", slices.Concat(memoryCases, remoteAccessCases)},
	{"Teardown", slices.Concat(teardownCases, disconnectReasonCases)},
	{"SharedCQ", sharedCQCases},
	{"SRQ", srqCases},
	{"Lifecycle", lifecycleCases},
	{"Errors", errorsCases},
}

// Run runs the whole suite against p. p must serve at least one address and
// allow two adapters opened on its addresses to connect to each other.
// Each case runs as the subtest Group/Name; a case that fails logs the
// rule it checks and the row of docs/semantics.md that states it.
func Run(t *testing.T, p nd.Provider) { RunSkipping(t, p, nil) }

// RunSkipping is Run with a provider's known differences skipped: skip,
// when not nil, is asked with each case's name under Run ("Group/Name")
// and a case for which it returns a reason is skipped (t.Skip) with it,
// so that each difference is counted and named in the test's output.
func RunSkipping(t *testing.T, p nd.Provider, skip func(name string) (reason string)) {
	for _, g := range suite {
		t.Run(g.Name, func(t *testing.T) {
			for _, c := range g.Cases {
				t.Run(c.Name, func(t *testing.T) {
					if skip != nil {
						if reason := skip(g.Name + "/" + c.Name); reason != "" {
							t.Skip(reason)
						}
					}
					t.Cleanup(func() {
						if t.Failed() {
							t.Logf("the rule checked: %s", c.Rule)
						}
					})
					c.Run(t, p)
				})
			}
		})
	}
}
