package tcp_test

import (
	"context"
	"errors"
	"net/netip"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/godirect/nd"
	"github.com/godirect/nd/ndtest"
	"github.com/godirect/nd/provider/tcp"
)

// systemCongestion returns the host's default TCP congestion control.
func systemCongestion(t *testing.T) string {
	b, err := os.ReadFile("/proc/sys/net/ipv4/tcp_congestion_control")
	if err != nil {
		t.Skipf("the system's congestion control is unknown: %v", err)
	}
	return strings.TrimSpace(string(b))
}

// checkLinks connects a pair over p, sends a 64 KiB message from the
// active side to the passive one (FPDUs longer than the reader's first
// buffer) and checks each link's congestion control and reader buffer.
func checkLinks(t *testing.T, p *tcp.Provider, wantCC string) {
	links := tcp.WatchLinks(t)
	d := ndtest.NewDataPath(t, p, 64<<10)
	for i := range d.ABuf {
		d.ABuf[i] = byte(i*3 + 1)
	}
	d.SendReceive(t)
	if string(d.PBuf) != string(d.ABuf) {
		t.Fatal("the Receive got bytes that differ from the Send")
	}
	ls := links()
	if len(ls) != 2 {
		t.Fatalf("%d links made, want 2", len(ls))
	}
	for _, l := range ls {
		if l.Congestion != wantCC {
			t.Errorf("link (active %v): congestion control %q, want %q", l.Active, l.Congestion, wantCC)
		}
		if want := !strings.HasPrefix(wantCC, "bbr"); l.Grows != want {
			t.Errorf("link (active %v) under %q: buffer grows %v, want %v", l.Active, wantCC, l.Grows, want)
		}
		size := l.BufferSize()
		switch {
		case l.Active:
			// It received nothing longer than 16 KiB.
			if size != 16<<10 {
				t.Errorf("active link's reader buffer: %d bytes, want %d", size, 16<<10)
			}
		case l.Grows && size != 256<<10:
			t.Errorf("passive link's reader buffer after a 64 KiB Send: %d bytes, want %d", size, 256<<10)
		case !l.Grows && size != 16<<10:
			t.Errorf("passive link's reader buffer (not growing): %d bytes, want %d", size, 16<<10)
		}
	}
}

// TestCongestionSameHost: by default, connections within the host use reno,
// and their reader's buffer grows for long FPDUs.
func TestCongestionSameHost(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the congestion control is chosen on Linux only")
	}
	checkLinks(t, loopback(), "reno")
}

// TestCongestionSystem: CongestionSystem leaves the system's default.
func TestCongestionSystem(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the congestion control is chosen on Linux only")
	}
	cfg := loopback().Config()
	cfg.CongestionControl = tcp.CongestionSystem
	checkLinks(t, tcp.New(cfg), systemCongestion(t))
}

// TestCongestionNamed: a named algorithm is set on both ends (the passive
// one through its listener). BBR is tried too where the kernel offers it:
// a link under BBR keeps the reader's first buffer.
func TestCongestionNamed(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the congestion control is chosen on Linux only")
	}
	for _, name := range []string{"reno", "bbr"} {
		t.Run(name, func(t *testing.T) {
			cfg := loopback().Config()
			cfg.CongestionControl = name
			p := tcp.New(cfg)
			if name != "reno" {
				a, _ := ndtest.OpenAdapters(t, p)
				l, err := a.Listen(0, ndtest.Protocol, 0)
				if err != nil {
					t.Skipf("%s not available here: %v", name, err)
				}
				l.Close()
			}
			checkLinks(t, p, name)
		})
	}
}

// TestCongestionRefused: a congestion control the kernel refuses fails
// Listen and Connect with ND_INVALID_PARAMETER and names the setting.
func TestCongestionRefused(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the congestion control is chosen on Linux only")
	}
	cfg := loopback().Config()
	cfg.CongestionControl = "no-such-algorithm"
	bad := tcp.New(cfg)
	a, _ := ndtest.OpenAdapters(t, bad)
	l, err := a.Listen(0, ndtest.Protocol, 0)
	if err == nil {
		l.Close()
	}
	checkRefused(t, "Listen", err)

	// Connect from the refused configuration to a listener of a good one.
	_, b := ndtest.OpenAdapters(t, loopback())
	good, err := b.Listen(0, ndtest.Protocol, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer good.Close()
	side := ndtest.NewSide(t, a, ndtest.DefaultLimits, 16, false)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err = side.Connector.Connect(ctx, side.Endpoint, netip.AddrPortFrom(b.Address(), good.Port()), ndtest.Protocol, 0, nil)
	checkRefused(t, "Connect", err)
}

func checkRefused(t *testing.T, op string, err error) {
	t.Helper()
	var oe *nd.OpError
	if !errors.As(err, &oe) || oe.Status != nd.ErrInvalidParameter {
		t.Fatalf("%s with a refused congestion control: %v, want ND_INVALID_PARAMETER", op, err)
	}
	if !strings.Contains(err.Error(), "no-such-algorithm") {
		t.Errorf("%s's error %q does not name the setting", op, err)
	}
}
