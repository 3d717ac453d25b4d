//go:build windows && (amd64 || arm64)

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
	dll     bool // a choice of godirect's DLL, not of ND itself
}{
	{2, `^Adapter/Listen/SamePortOtherProtocol$`,
		"ND v2 has no protocol number: two listeners of one port collide whatever protocols nd names", false},
	{2, `^Connection/Refused/OtherProtocol$`,
		"ND v2 has no protocol number: a Connect naming another protocol reaches the port's listener", false},
	{2, `^Connection/LocalPortInUse$`,
		"the DLL's ND v2 Connect takes another local port when the one Bind named is in use (MS-MPI binds every connector to its listener's port), so it does not fail", true},
	{2, `^Memory/SendAndInvalidate/`,
		"ND v2 has no SendAndInvalidate: it is ND_NOT_SUPPORTED", false},
	{2, `^Memory/RemoteAccess/Parameters$`,
		"ND v2 has no SendAndInvalidate, with which the case ends (its parameter checks pass)", false},
	{2, `^SRQ/(ReceiveLimits|CompletesOnConsumersQueue|LimitEvent|Flush)$`,
		"ND v2's IND2SharedReceiveQueue has no Flush: nd's is ND_NOT_SUPPORTED (the queue's Close completes its Receives)", false},
	{1, `^Errors/Shape$`, argNames, false},
	{2, `^Errors/Shape$`, argNames, false},
	{1, `^Adapter/Query$`,
		"ND v1's ND_ADAPTER_INFO has no flags: whether data is placed in order and loopback connections work cannot be told", false},
}

// argNames is why Errors/Shape is skipped: not a difference of ND, which
// numbers the refused parameter, but one of ndspi, whose refusals (its
// own and the ND provider's) are still the bare ND_INVALID_PARAMETER_n
// statuses rather than *nd.ArgErrors naming the Go argument.
const argNames = "provider/ndspi does not name the Go argument of a refusal yet: its refusals, its own and the ND provider's, are bare ND statuses, not *nd.ArgError"

// skipFor returns ndtest.RunSkipping's skip function for ND version v
// through godirect's DLL.
func skipFor(v int) func(string) string { return skipping(v, true) }

// skipping returns the skip function of ND version v's differences; with
// dll, those of godirect's DLL too.
func skipping(v int, dll bool) func(string) string {
	if os.Getenv("GODIRECT_NDSPI_NO_SKIPS") != "" {
		return nil
	}
	return func(name string) string {
		for _, d := range differences {
			if d.version == v && (dll || !d.dll) && regexp.MustCompile(d.cases).MatchString(name) {
				return "a difference of provider ndspi (docs/windows.md): " + d.reason
			}
		}
		return ""
	}
}
