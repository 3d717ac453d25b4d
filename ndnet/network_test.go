package ndnet_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/godirect/nd"
	"github.com/godirect/nd/ndnet"
)

// The registered providers by their network names, listened and dialed by
// name, each stream closed by CloseWrite on the *Conn AcceptND returns.
func TestNetworkNames(t *testing.T) {
	for _, network := range []string{"nd/loop", "nd/tcp", "nd/shm"} {
		t.Run(network, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			l, err := ndnet.ListenNetwork(network, "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			if got := l.Addr().Network(); got != network {
				t.Errorf("Addr().Network() = %q, want %q", got, network)
			}
			accepted := make(chan *ndnet.Conn, 1)
			go func() {
				s, err := l.AcceptND()
				if err != nil {
					t.Error(err)
				}
				accepted <- s
			}()
			c, err := ndnet.DialNetwork(ctx, network, l.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			s := <-accepted
			if s == nil {
				return
			}
			defer s.Close()
			if _, err := s.Write([]byte("hello over " + network)); err != nil {
				t.Fatal(err)
			}
			if err := s.CloseWrite(); err != nil {
				t.Fatal(err)
			}
			got, err := io.ReadAll(c)
			if err != nil || string(got) != "hello over "+network {
				t.Fatalf("read %q, %v; want %q and io.EOF", got, err, "hello over "+network)
			}
			if c.RemoteAddr().Network() != network || c.LocalAddr().Network() != network {
				t.Errorf("addresses of %s: %v, %v", network, c.LocalAddr(), c.RemoteAddr())
			}
		})
	}
}

func TestNetworkNameErrors(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		network string
		unknown bool   // a net.UnknownNetworkError
		text    string // in the error's text
	}{
		{"tcp", true, `unknown network tcp`},
		{"nd/", true, `unknown network nd/`},
		{"nd/nothing", false, `no provider "nothing" is registered; registered: `},
		// This module's provider that these tests import only with the
		// verbs build tag: the error names its import.
		{"nd/verbs", false, `no provider "verbs" is registered (forgotten import? import _ "github.com/godirect/nd/provider/verbs" registers it)`},
	} {
		if c.network == "nd/verbs" && slices.Contains(nd.Providers(), "verbs") {
			continue
		}
		_, derr := ndnet.DialNetwork(ctx, c.network, "127.0.0.1:1")
		_, lerr := ndnet.ListenNetwork(c.network, "127.0.0.1:0")
		for _, err := range []error{derr, lerr} {
			var oe *net.OpError
			if !errors.As(err, &oe) || oe.Net != c.network {
				t.Errorf("%s: %v; want a *net.OpError of network %q", c.network, err, c.network)
				continue
			}
			var une net.UnknownNetworkError
			if errors.As(err, &une) != c.unknown {
				t.Errorf("%s: %v; net.UnknownNetworkError %v, want %v", c.network, err, !c.unknown, c.unknown)
			}
			if !strings.Contains(err.Error(), c.text) {
				t.Errorf("%s: %q does not say %q", c.network, err, c.text)
			}
			if !c.unknown && !errors.Is(err, nd.ErrNotSupported) {
				t.Errorf("%s: %v is not nd.ErrNotSupported", c.network, err)
			}
		}
	}
}

// A Dialer serves as net/http's Transport.DialContext: HTTP over ndnet by
// network name.
func TestDialerDialContextServesHTTP(t *testing.T) {
	l, err := ndnet.ListenNetwork("nd/loop", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "served over "+r.Host)
	})}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(l) }()
	defer func() {
		srv.Close()
		if err := <-done; !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("Serve: %v", err)
		}
	}()
	d := &ndnet.Dialer{}
	var dial func(ctx context.Context, network, address string) (net.Conn, error) = d.DialContext
	client := &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, address string) (net.Conn, error) {
			return dial(ctx, "nd/loop", address)
		},
	}}
	defer client.CloseIdleConnections()
	resp, err := client.Get("http://" + l.Addr().String() + "/")
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || string(body) != "served over "+l.Addr().String() {
		t.Fatalf("body %q, %v", body, err)
	}
}
