package tcp_test

import (
	"fmt"
	"io"
	"net"
	"testing"
	"time"
)

// The baselines measure plain Go TCP sockets on loopback in the same run as
// the transport's benchmarks: a ping-pong of n-byte messages (blocking
// reads through the runtime poller) and a one-way stream of n-byte writes.

func tcpPair(tb testing.TB) (client, server net.Conn) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			accepted <- nil
			return
		}
		accepted <- c
	}()
	client, err = net.Dial("tcp", ln.Addr().String())
	if err != nil {
		tb.Fatal(err)
	}
	server = <-accepted
	if server == nil {
		tb.Fatal("accept failed")
	}
	tb.Cleanup(func() { client.Close(); server.Close() })
	return client, server
}

func BenchmarkBaselineTCPPingPong(b *testing.B) {
	for _, size := range []int{8, 4096} {
		b.Run(fmt.Sprint(size), func(b *testing.B) {
			client, server := tcpPair(b)
			go func() {
				buf := make([]byte, size)
				for {
					if _, err := io.ReadFull(server, buf); err != nil {
						return
					}
					if _, err := server.Write(buf); err != nil {
						return
					}
				}
			}()
			buf := make([]byte, size)
			b.SetBytes(int64(2 * size))
			b.ReportAllocs()
			start := time.Now()
			for b.Loop() {
				if _, err := client.Write(buf); err != nil {
					b.Fatal(err)
				}
				if _, err := io.ReadFull(client, buf); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(time.Since(start).Nanoseconds())/float64(b.N)/2, "half-rtt-ns")
		})
	}
}

func BenchmarkBaselineTCPStream(b *testing.B) {
	for _, size := range []int{4 << 10, 64 << 10, 1 << 20} {
		b.Run(fmt.Sprint(size), func(b *testing.B) {
			client, server := tcpPair(b)
			done := make(chan int64, 1)
			go func() {
				n, _ := io.Copy(io.Discard, server)
				done <- n
			}()
			buf := make([]byte, size)
			b.SetBytes(int64(size))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := client.Write(buf); err != nil {
					b.Fatal(err)
				}
			}
			client.(*net.TCPConn).CloseWrite()
			<-done
		})
	}
}
