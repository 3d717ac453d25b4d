package main

import (
	"bytes"
	"strings"
	"sync"
	"testing"
)

// runNd runs nd with args and returns its exit status, stdout and stderr.
func runNd(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := run(args, &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

// syncBuffer is a bytes.Buffer safe for concurrent use that signals its
// first write.
type syncBuffer struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	once    sync.Once
	written chan struct{}
}

func newSyncBuffer() *syncBuffer { return &syncBuffer{written: make(chan struct{})} }

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	defer b.once.Do(func() { close(b.written) })
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func TestUsage(t *testing.T) {
	tests := []struct {
		args     []string
		code     int
		stdout   string // a substring of stdout, if not ""
		stderr   string // a substring of stderr, if not ""
		noStdout bool
	}{
		{args: nil, code: 2, stderr: "Commands:", noStdout: true},
		{args: []string{"help"}, code: 0, stdout: "pingpong"},
		{args: []string{"help", "pingpong"}, code: 0, stdout: "-iters"},
		{args: []string{"help", "info"}, code: 0, stdout: "-provider"},
		{args: []string{"help", "nosuch"}, code: 2, stderr: `unknown command "nosuch"`},
		{args: []string{"nosuch"}, code: 2, stderr: `unknown command "nosuch"`},
		{args: []string{"pingpong", "-h"}, code: 0, stdout: "Usage: nd pingpong"},
		{args: []string{"info", "-h"}, code: 0, stdout: "Usage: nd info"},
		{args: []string{"pingpong", "-bogus"}, code: 2, stderr: "flag provided but not defined: -bogus"},
		{args: []string{"pingpong", "-s", "-c", "127.0.0.1"}, code: 2, stderr: "-s and -c exclude each other"},
		{args: []string{"pingpong", "-c"}, code: 2, stderr: "-c needs the server's ADDRESS[:PORT]"},
		{args: []string{"pingpong", "127.0.0.1"}, code: 2, stderr: "give -s or -c"},
		{args: []string{"pingpong", "-c", "nonsense"}, code: 2, stderr: `"nonsense" is not an IP address`},
		{args: []string{"pingpong", "-max", "lots"}, code: 2, stderr: "is not a byte count"},
		{args: []string{"pingpong", "-n", "0"}, code: 2, stderr: "-n 0"},
		{args: []string{"pingpong", "-c", "-p", "1", "127.0.0.1:2"}, code: 2, stderr: "disagree"},
		{args: []string{"info", "1.2.3.4", "5.6.7.8"}, code: 2, stderr: "too many arguments"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			code, stdout, stderr := runNd(t, tt.args...)
			if code != tt.code {
				t.Errorf("exit status %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tt.code, stdout, stderr)
			}
			if !strings.Contains(stdout, tt.stdout) {
				t.Errorf("stdout does not contain %q:\n%s", tt.stdout, stdout)
			}
			if !strings.Contains(stderr, tt.stderr) {
				t.Errorf("stderr does not contain %q:\n%s", tt.stderr, stderr)
			}
			if tt.noStdout && stdout != "" {
				t.Errorf("stdout is not empty:\n%s", stdout)
			}
		})
	}
}
