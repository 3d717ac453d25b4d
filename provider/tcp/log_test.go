//go:build unix

package tcp_test

import (
	"log/slog"
	"strings"
	"testing"

	"github.com/godirect/nd"
	"github.com/godirect/nd/ndtest"
	"github.com/godirect/nd/provider/tcp"
)

// TestLoggerSeesTerminates: with Config.Logger set, the Terminate the
// target sends for a refused Write, and the one the initiator receives,
// are logged with their layer, type and code.
func TestLoggerSeesTerminates(t *testing.T) {
	var out lockedBuffer
	cfg := loopback().Config()
	cfg.Logger = slog.New(slog.NewTextHandler(&out, nil))
	pr := ndtest.NewPair(t, tcp.New(cfg), ndtest.PairConfig{})
	a := pr.Active
	buf := make([]byte, 64)
	mr := a.Register(t, buf)
	var res nd.Result
	forged := nd.MWDescriptor{Base: 4096, Length: 64, Token: 0x12345600}
	if err := a.Endpoint.Write(&res, []nd.SGE{{Buffer: buf, Region: mr}}, forged, 0, 0); err != nil {
		t.Fatal(err)
	}
	ndtest.Expect(t, a.OutCQ, &res, nd.ErrAccessViolation, -1)
	ndtest.AwaitDisconnect(t, pr.Passive.Connector, "the forged Write")
	ndtest.AwaitDisconnect(t, a.Connector, "the forged Write")
	log := out.String()
	for _, want := range []string{"Terminate sent", "Terminate received", "layer=1 etype=1 code=0"} {
		if !strings.Contains(log, want) {
			t.Errorf("the log lacks %q:\n%s", want, log)
		}
	}
}
