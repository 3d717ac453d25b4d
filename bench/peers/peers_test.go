package peers

import (
	"fmt"
	"io"
	"net"
	"sync"
	"testing"

	"github.com/godirect/nd/ndtest"
)

// goPeers is n loopback TCP connections; a goroutine per server end reads
// size-byte messages and reports each on got (or echoes it when echo).
type goPeers struct {
	clients []net.Conn
	got     chan int
	wg      sync.WaitGroup
}

func newGoPeers(tb testing.TB, n, size int, echo bool) *goPeers {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	defer ln.Close()
	ps := &goPeers{got: make(chan int, n)}
	for i := range n {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			tb.Fatalf("dial %d: %v", i, err)
		}
		s, err := ln.Accept()
		if err != nil {
			tb.Fatalf("accept %d: %v", i, err)
		}
		ps.clients = append(ps.clients, c)
		ps.wg.Add(1)
		go func() {
			defer ps.wg.Done()
			defer s.Close()
			buf := make([]byte, size)
			for {
				if _, err := io.ReadFull(s, buf); err != nil {
					return
				}
				if echo {
					if _, err := s.Write(buf); err != nil {
						return
					}
				} else {
					ps.got <- i
				}
			}
		}()
	}
	tb.Cleanup(func() {
		for _, c := range ps.clients {
			c.Close()
		}
		ps.wg.Wait()
	})
	return ps
}

// BenchmarkPeers is ndtest.BenchmarkPeers's Round and PingPong with plain
// Go sockets: Round writes one 64-byte message on every connection and
// waits until every server goroutine read its own; PingPong is an 8-byte
// echo over one connection after another.
func BenchmarkPeers(b *testing.B) {
	for _, n := range ndtest.PeerCounts {
		b.Run(fmt.Sprintf("N=%d", n), func(b *testing.B) {
			b.Run("Round", func(b *testing.B) {
				ps := newGoPeers(b, n, 64, false)
				msg := make([]byte, 64)
				for b.Loop() {
					for _, c := range ps.clients {
						if _, err := c.Write(msg); err != nil {
							b.Fatal(err)
						}
					}
					for range n {
						<-ps.got
					}
				}
				b.ReportMetric(float64(b.N*n)/b.Elapsed().Seconds(), "msg/s")
			})
			b.Run("PingPong", func(b *testing.B) {
				ps := newGoPeers(b, n, 8, true)
				msg := make([]byte, 8)
				i := 0
				for b.Loop() {
					c := ps.clients[i]
					if _, err := c.Write(msg); err != nil {
						b.Fatal(err)
					}
					if _, err := io.ReadFull(c, msg); err != nil {
						b.Fatal(err)
					}
					i = (i + 1) % n
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/2, "half-rtt-ns")
			})
		})
	}
}

// TestPeersCarryBytes: the plain Go round moves every message.
func TestPeersCarryBytes(t *testing.T) {
	ps := newGoPeers(t, 20, 64, false)
	seen := make([]int, 20)
	for range 3 {
		for _, c := range ps.clients {
			if _, err := c.Write(make([]byte, 64)); err != nil {
				t.Fatal(err)
			}
		}
		for range 20 {
			seen[<-ps.got]++
		}
	}
	for i, k := range seen {
		if k != 3 {
			t.Fatalf("connection %d: %d messages read, want 3", i, k)
		}
	}
}
