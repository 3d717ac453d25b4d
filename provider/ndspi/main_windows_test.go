//go:build windows

package ndspi_test

import (
	"os"
	"regexp"
	"testing"

	"github.com/godirect/nd"
	"github.com/godirect/nd/ndtest"
)

// TestMain runs the tests, or serves a conformance session: across hosts
// (GODIRECT_NDSPI_SERVE) or as the child of TestConformanceRemote.
func TestMain(m *testing.M) {
	if spec := os.Getenv(childEnv); spec != "" {
		os.Exit(serveChild(spec))
	}
	if addr := os.Getenv(EnvServe); addr != "" {
		os.Exit(serveTCP(addr))
	}
	os.Exit(m.Run())
}

// runSuite runs the suite over p with the differences of ND version v
// skipped.
func runSuite(t *testing.T, p nd.Provider, v int) { ndtest.RunSkipping(t, p, skipFor(v)) }

// differences are the conformance cases whose outcome through provider
// ndspi differs from the native providers', with the reason: what ND v1 or
// v2 cannot carry, or a choice of godirect's DLL. TestConformance skips
// them (ndtest.RunSkipping), so that each is counted and named in the
// output, unless GODIRECT_NDSPI_NO_SKIPS is set; docs/windows.md lists
// them too.
var differences = []struct {
	version int    // 1 or 2
	cases   string // a regular expression on the case's Group/Name
	reason  string
}{
	{2, `^Adapter/Listen/SamePortOtherProtocol$`,
		"ND v2 has no protocol number: two listeners of one port collide whatever protocols nd names"},
	{2, `^Connection/Refused/OtherProtocol$`,
		"ND v2 has no protocol number: a Connect naming another protocol reaches the port's listener"},
	{2, `^Connection/LocalPortInUse$`,
		"the DLL's ND v2 Connect takes another local port when the one Bind named is in use (MS-MPI binds every connector to its listener's port), so it does not fail"},
	{2, `^Memory/SendAndInvalidate/`,
		"ND v2 has no SendAndInvalidate: it is ND_NOT_SUPPORTED"},
	{2, `^Memory/RemoteAccess/Parameters$`,
		"ND v2 has no SendAndInvalidate, with which the case ends (its parameter checks pass)"},
	{2, `^SRQ/(ReceiveLimits|CompletesOnConsumersQueue|LimitEvent|Flush)$`,
		"ND v2's IND2SharedReceiveQueue has no Flush: nd's is ND_NOT_SUPPORTED (the queue's Close completes its Receives)"},
	{1, `^Adapter/Query$`,
		"ND v1's ND_ADAPTER_INFO has no flags: whether data is placed in order and loopback connections work cannot be told"},
}

// skipFor returns ndtest.RunSkipping's skip function for ND version v.
func skipFor(v int) func(string) string {
	if os.Getenv("GODIRECT_NDSPI_NO_SKIPS") != "" {
		return nil
	}
	return func(name string) string {
		for _, d := range differences {
			if d.version == v && regexp.MustCompile(d.cases).MatchString(name) {
				return "a difference of provider ndspi (docs/windows.md): " + d.reason
			}
		}
		return ""
	}
}
