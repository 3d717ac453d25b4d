package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/godirect/nd"
	"github.com/godirect/nd/provider/shm"
	"github.com/godirect/nd/provider/tcp"
)

// serverEnv makes the test binary a server process (TestServerProcess).
const serverEnv = "NDNET_EXAMPLE_SERVER"

func provider(name string) nd.Provider {
	if name == "tcp" {
		return tcp.New(tcp.DefaultConfig())
	}
	return shm.New(shm.DefaultConfig())
}

// TestServerProcess serves in a child process until its standard input
// closes.
func TestServerProcess(t *testing.T) {
	name := os.Getenv(serverEnv)
	if name == "" {
		t.Skip("run by the other tests")
	}
	s, err := serve(provider(name))
	if err != nil {
		t.Fatal(err)
	}
	fmt.Printf("grpc=%s http=%s tcpgrpc=%s\n", s.grpc.Addr(), s.http.Addr(), s.tcpGRPC.Addr())
	io.Copy(io.Discard, os.Stdin)
}

// startServer runs the servers in a child process over the named provider
// and returns their addresses.
func startServer(t testing.TB, name string) (grpcAddr, httpAddr, tcpGRPCAddr string) {
	cmd := exec.Command(os.Args[0], "-test.run=^TestServerProcess$")
	cmd.Env = append(os.Environ(), serverEnv+"="+name)
	cmd.Stderr = os.Stderr
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		stdin.Close()
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-done
		}
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatalf("server: %v", err)
	}
	if _, err := fmt.Sscanf(strings.TrimSpace(line), "grpc=%s http=%s tcpgrpc=%s", &grpcAddr, &httpAddr, &tcpGRPCAddr); err != nil {
		t.Fatalf("server said %q: %v", line, err)
	}
	go io.Copy(io.Discard, stdout)
	return grpcAddr, httpAddr, tcpGRPCAddr
}

// TestAcrossProcesses: net/http and gRPC (unary and streaming) between two
// processes over ndnet streams.
func TestAcrossProcesses(t *testing.T) {
	for _, name := range []string{"shm", "tcp"} {
		t.Run(name, func(t *testing.T) {
			grpcAddr, httpAddr, _ := startServer(t, name)
			p := provider(name)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()

			hc := httpClient(p)
			defer hc.Transport.(*http.Transport).CloseIdleConnections()
			resp, err := hc.Get("http://" + httpAddr + "/hello?name=ndnet")
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if want := "hello ndnet over nd/" + name; string(body) != want {
				t.Errorf("GET /hello = %q, want %q", body, want)
			}
			big := make([]byte, 3<<20)
			for i := range big {
				big[i] = byte(rand.Uint32())
			}
			resp, err = hc.Post("http://"+httpAddr+"/echo", "application/octet-stream", bytes.NewReader(big))
			if err != nil {
				t.Fatal(err)
			}
			body, _ = io.ReadAll(resp.Body)
			resp.Body.Close()
			if !bytes.Equal(body, big) {
				t.Errorf("POST /echo of %d bytes came back as %d bytes, equal=%v", len(big), len(body), bytes.Equal(body, big))
			}

			cc, err := grpcClient(p, grpcAddr)
			if err != nil {
				t.Fatal(err)
			}
			defer cc.Close()
			for i := range 100 {
				msg := []byte(fmt.Sprintf("call %d", i))
				got, err := unary(ctx, cc, msg)
				if err != nil || !bytes.Equal(got, msg) {
					t.Fatalf("Unary(%q) = %q, %v", msg, got, err)
				}
			}
			msgs := [][]byte{[]byte("one"), big[:100000], []byte("three"), big}
			answers, err := streamEcho(ctx, cc, msgs)
			if err != nil {
				t.Fatal(err)
			}
			for i := range msgs {
				if !bytes.Equal(answers[i], msgs[i]) {
					t.Errorf("stream message %d: %d bytes back, want %d equal", i, len(answers[i]), len(msgs[i]))
				}
			}
		})
	}
}

// BenchmarkGRPCUnary: one small unary gRPC round trip to a server process,
// over ndnet on shm and tcp, and over plain loopback TCP.
func BenchmarkGRPCUnary(b *testing.B) {
	for _, name := range []string{"shm", "tcp", "net-tcp"} {
		b.Run(name, func(b *testing.B) {
			server := name
			if name == "net-tcp" {
				server = "shm"
			}
			grpcAddr, _, tcpAddr := startServer(b, server)
			var p nd.Provider
			addr := tcpAddr
			if name != "net-tcp" {
				p, addr = provider(name), grpcAddr
			}
			cc, err := grpcClient(p, addr)
			if err != nil {
				b.Fatal(err)
			}
			defer cc.Close()
			ctx := context.Background()
			msg := make([]byte, 64)
			for range 100 {
				if _, err := unary(ctx, cc, msg); err != nil {
					b.Fatal(err)
				}
			}
			b.ResetTimer()
			for b.Loop() {
				if _, err := unary(ctx, cc, msg); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
