package main

import (
	"bytes"
	"context"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/godirect/nd/cmd/nd/internal/cli"
	"github.com/godirect/nd/cmd/nd/internal/rping"
)

// startRpingServer runs "nd rping -s" with args (and -p 0) in the
// background and returns the port it listens on and a channel that
// delivers its result.
func startRpingServer(t *testing.T, ctx context.Context, args ...string) (uint16, <-chan error, *syncBuffer) {
	t.Helper()
	fs, c := rping.NewFlagSet()
	var errOut bytes.Buffer
	fs.SetOutput(&errOut)
	if err := fs.Parse(append([]string{"-s", "-p", "0"}, args...)); err != nil {
		t.Fatalf("server flags %q: %v\n%s", args, err, errOut.String())
	}
	listening := make(chan netip.AddrPort, 1)
	c.Listening = func(ap netip.AddrPort) { listening <- ap }
	out := newSyncBuffer()
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx, out) }()
	select {
	case ap := <-listening:
		return ap.Port(), done, out
	case err := <-done:
		t.Fatalf("the server exited before listening: %v", err)
	case <-ctx.Done():
		t.Fatalf("the server did not listen: %v", ctx.Err())
	}
	panic("unreachable")
}

// TestRping runs nd rping's server and client against each other over
// loopback with the tcp provider.
func TestRping(t *testing.T) {
	tests := []struct {
		name             string
		server, client   []string
		size             int
		wildcard, dotted bool
	}{
		{name: "default size", server: []string{"-a", "127.0.0.1", "-C", "5", "-V"}, client: []string{"-C", "5", "-V", "-v"}, size: 64},
		{name: "crc", server: []string{"-a", "127.0.0.1", "-C", "5", "-V", "-crc"}, client: []string{"-C", "5", "-V", "-v", "-crc"}, size: 64},
		{name: "client crc only", server: []string{"-a", "127.0.0.1", "-C", "5", "-V"}, client: []string{"-C", "5", "-V", "-v", "-crc"}, size: 64},
		{name: "server crc only, any address", server: []string{"-C", "5", "-V", "-crc"}, client: []string{"-C", "5", "-V", "-v"}, size: 64},
		{name: "minimum size", server: []string{"-a", "127.0.0.1", "-C", "5", "-V", "-S", "26"}, client: []string{"-C", "5", "-V", "-v", "-S", "26"}, size: 26},
		{name: "maximum size crc", server: []string{"-a", "127.0.0.1", "-C", "5", "-V", "-S", "65535", "-crc"}, client: []string{"-C", "5", "-V", "-v", "-S", "65535"}, size: 65535},
		{name: "smaller client", server: []string{"-a", "127.0.0.1", "-C", "5", "-V", "-S", "1000"}, client: []string{"-C", "5", "-V", "-v", "-S", "100"}, size: 100},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			port, served, serverOut := startRpingServer(t, ctx, append(tt.server, "-v")...)
			args := append([]string{"rping", "-c", "-a", "127.0.0.1", "-p", strconv.Itoa(int(port)), "-timeout", "1m"}, tt.client...)
			code, stdout, stderr := runNd(t, args...)
			if code != 0 {
				t.Errorf("client exit status %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
			}
			if err := <-served; err != nil {
				t.Errorf("server: %v", err)
			}
			lines := strings.Split(strings.TrimSpace(stdout), "\n")
			if len(lines) != 5 {
				t.Fatalf("client printed %d lines, want 5:\n%s", len(lines), stdout)
			}
			for i, line := range lines {
				want := make([]byte, tt.size)
				rping.FillPing(want, i, rping.StartLetter(i))
				if line != "ping data: "+string(cli.CString(want)) {
					t.Errorf("client line %d = %q, want the ping data of ping %d", i, line, i)
				}
			}
			if got := strings.Count(serverOut.String(), "server ping data: rdma-ping-"); got != 5 {
				t.Errorf("server printed %d pings, want 5:\n%s", got, serverOut.String())
			}
		})
	}
}

// TestRpingFailures checks that nd rping exits non-zero when a ping cannot
// complete.
func TestRpingFailures(t *testing.T) {
	t.Run("no server", func(t *testing.T) {
		// A port nobody listens on: listen, note the port, close.
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		port := ln.Addr().(*net.TCPAddr).Port
		ln.Close()
		code, _, stderr := runNd(t, "rping", "-c", "-a", "127.0.0.1", "-p", strconv.Itoa(port), "-C", "1", "-timeout", "30s")
		if code != 1 || !strings.Contains(stderr, "connecting to 127.0.0.1") {
			t.Errorf("exit status %d, want 1 and a Connect error; stderr:\n%s", code, stderr)
		}
	})
	t.Run("client larger than server", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		port, served, _ := startRpingServer(t, ctx, "-a", "127.0.0.1", "-S", "64")
		code, _, stderr := runNd(t, "rping", "-c", "-a", "127.0.0.1", "-p", strconv.Itoa(int(port)), "-S", "100", "-C", "3", "-timeout", "1m")
		if code != 1 {
			t.Errorf("client exit status %d, want 1; stderr:\n%s", code, stderr)
		}
		if err := <-served; err == nil || !strings.Contains(err.Error(), "advertised 100 bytes") {
			t.Errorf("server error %v, want one about the advertised size", err)
		}
	})
	t.Run("client stops early", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		port, served, _ := startRpingServer(t, ctx, "-a", "127.0.0.1", "-C", "5")
		code, _, stderr := runNd(t, "rping", "-c", "-a", "127.0.0.1", "-p", strconv.Itoa(int(port)), "-C", "3", "-timeout", "1m")
		if code != 0 {
			t.Errorf("client exit status %d, want 0; stderr:\n%s", code, stderr)
		}
		if err := <-served; err == nil || !strings.Contains(err.Error(), "after 3 pings, -C 5 expected") {
			t.Errorf("server error %v, want one about the missing pings", err)
		}
	})
}

// TestRpingUsage checks nd rping's command-line checks.
func TestRpingUsage(t *testing.T) {
	for _, tt := range []struct {
		args   []string
		stderr string
	}{
		{[]string{"-s", "-c"}, "-s and -c exclude each other"},
		{[]string{}, "give -s (server) or -c (client)"},
		{[]string{"-c"}, "-c needs the server's address"},
		{[]string{"-c", "-a", "127.0.0.1", "-S", "22"}, "-S 22: invalid size (valid range is 23 to 65535)"},
		{[]string{"-c", "-a", "127.0.0.1", "-S", "65536"}, "-S 65536: invalid size"},
		// As rping reads them (atoi): 0 and a negative size.
		{[]string{"-c", "-a", "127.0.0.1", "-S", "0x40"}, "-S 0: invalid size"},
		{[]string{"-c", "-a", "127.0.0.1", "-S", "-5"}, "-S -5: invalid size"},
		{[]string{"-c", "-a", "127.0.0.1", "-C", "-1x"}, "-C -1: invalid count"},
		{[]string{"-c", "-a", "127.0.0.1", "-C", "-1"}, "-C -1: invalid count"},
		{[]string{"-c", "-a", "127.0.0.1", "-provider", "loop", "-crc"}, "-crc needs the tcp provider"},
		{[]string{"-c", "-a", "127.0.0.1", "extra"}, "unexpected arguments"},
	} {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			code, _, stderr := runNd(t, append([]string{"rping"}, tt.args...)...)
			if code != 2 || !strings.Contains(stderr, tt.stderr) {
				t.Errorf("exit status %d, want 2 and %q in stderr:\n%s", code, tt.stderr, stderr)
			}
		})
	}
}

// TestRpingSizes runs nd rping at the sizes at the edges of rping's range,
// 23 (where the longest "rdma-ping-%d: " is cut) and 65535, and with a size
// written as rping reads it ("0100" is 100 bytes), over the loop provider:
// the server reads the client's start buffer and checks it (-V).
func TestRpingSizes(t *testing.T) {
	for _, size := range []string{"23", "0100", "65535"} {
		t.Run(size, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			port, served, _ := startRpingServer(t, ctx, "-provider", "loop", "-a", "127.0.0.1", "-S", size, "-C", "3", "-V")
			code, stdout, stderr := runNd(t, "rping", "-provider", "loop", "-c", "-a", "127.0.0.1", "-p", strconv.Itoa(int(port)),
				"-S", size, "-C", "3", "-V", "-v", "-timeout", "1m")
			if code != 0 {
				t.Fatalf("client exit status %d; stderr:\n%s", code, stderr)
			}
			if err := <-served; err != nil {
				t.Fatalf("server: %v", err)
			}
			want := make([]byte, cli.Atoi(size))
			rping.FillPing(want, 2, rping.StartLetter(2))
			if !strings.Contains(stdout, "ping data: "+string(cli.CString(want))+"\n") {
				t.Errorf("the client's output lacks ping 2's data %q:\n%s", cli.CString(want), stdout)
			}
		})
	}
}
