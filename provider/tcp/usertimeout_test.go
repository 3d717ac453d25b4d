package tcp_test

import (
	"runtime"
	"testing"
	"time"

	"github.com/godirect/nd/ndtest"
	"github.com/godirect/nd/provider/tcp"
)

// TestUserTimeout: both ends of every connection carry the bound on
// unacknowledged data (TCP_USER_TIMEOUT): by default the time keepalive
// gives a silent peer, as configured, or none (the system's limit) when
// it is negative.
func TestUserTimeout(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the socket option is read back on Linux only")
	}
	for _, tt := range []struct {
		name string
		set  func(*tcp.Config)
		want time.Duration
	}{
		{"default", func(*tcp.Config) {}, 10 * time.Second},
		{"from-keepalive", func(c *tcp.Config) {
			c.KeepAlive, c.KeepAliveInterval, c.KeepAliveCount = 3*time.Second, 2*time.Second, 4
		}, 11 * time.Second},
		{"configured", func(c *tcp.Config) { c.UserTimeout = 7500 * time.Millisecond }, 7500 * time.Millisecond},
		{"system", func(c *tcp.Config) { c.UserTimeout = -1 }, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cfg := loopback().Config()
			cfg.UserTimeout = 0
			tt.set(&cfg)
			p := tcp.New(cfg)
			if got := p.Config().UserTimeout; tt.want > 0 && got != tt.want {
				t.Errorf("Config().UserTimeout = %v, want %v", got, tt.want)
			}
			links := tcp.WatchLinks(t)
			d := ndtest.NewDataPath(t, p, 1024)
			d.SendReceive(t)
			ls := links()
			if len(ls) != 2 {
				t.Fatalf("%d links made, want 2", len(ls))
			}
			for _, l := range ls {
				if l.UserTimeoutErr != nil || l.UserTimeout != tt.want {
					t.Errorf("link (active %v): TCP_USER_TIMEOUT = %v, %v; want %v", l.Active, l.UserTimeout, l.UserTimeoutErr, tt.want)
				}
			}
		})
	}
}
