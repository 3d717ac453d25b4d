package ndnet_test

import (
	"bytes"
	"errors"
	"hash/crc32"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/godirect/nd/ndnet"
)

// small is a configuration that makes every path busy: few credits, tiny
// frames, a ring that wraps every few writes.
var small = ndnet.Config{QueueDepth: 2, InlineThreshold: 64, BufferSize: 4096}

// writeRandom writes total bytes of a seeded stream in writes of random
// sizes up to maxWrite, and returns their CRC.
func writeRandom(t *testing.T, c net.Conn, seed uint64, total, maxWrite int) uint32 {
	r := rand.New(rand.NewPCG(seed, 1))
	buf := make([]byte, maxWrite)
	crc := crc32.NewIEEE()
	for total > 0 {
		n := min(total, 1+r.IntN(maxWrite))
		for i := range buf[:n] {
			buf[i] = byte(r.Uint32())
		}
		crc.Write(buf[:n])
		if m, err := c.Write(buf[:n]); m != n || err != nil {
			t.Errorf("Write(%d bytes) = %d, %v", n, m, err)
			return 0
		}
		total -= n
	}
	return crc.Sum32()
}

// readAll reads to EOF in reads of random sizes and returns the count and
// CRC.
func readAll(t *testing.T, c net.Conn, seed uint64, maxRead int) (int, uint32) {
	r := rand.New(rand.NewPCG(seed, 2))
	buf := make([]byte, maxRead)
	crc := crc32.NewIEEE()
	total := 0
	for {
		n, err := c.Read(buf[:1+r.IntN(maxRead)])
		crc.Write(buf[:n])
		total += n
		if err == io.EOF {
			return total, crc.Sum32()
		}
		if err != nil {
			t.Errorf("Read after %d bytes: %v", total, err)
			return total, 0
		}
	}
}

// TestStreamBothWays sends a stream each way at once, in writes small and
// large (frames and the ring), ending each with CloseWrite, and checks
// every byte and the EOF on both sides.
func TestStreamBothWays(t *testing.T) {
	for _, pr := range providers {
		for _, cfg := range []struct {
			name string
			cfg  ndnet.Config
			max  int
		}{{"small", small, 5000}, {"default", ndnet.Config{}, 300000}} {
			t.Run(pr.name+"/"+cfg.name, func(t *testing.T) {
				c1, c2, stop := pipe(t, pr.p(), pr.addr, cfg.cfg)
				defer stop()
				const total = 3 << 20
				var wg sync.WaitGroup
				check := func(w, r *ndnet.Conn, seed uint64) {
					defer wg.Done()
					var want uint32
					done := make(chan struct{})
					go func() {
						defer close(done)
						want = writeRandom(t, w, seed, total, cfg.max)
						if err := w.CloseWrite(); err != nil {
							t.Errorf("CloseWrite: %v", err)
						}
					}()
					n, got := readAll(t, r, seed+100, cfg.max)
					<-done
					if n != total || got != want {
						t.Errorf("read %d bytes, CRC %08x; want %d, %08x", n, got, total, want)
					}
				}
				wg.Add(2)
				go check(c1, c2, 1)
				go check(c2, c1, 2)
				wg.Wait()
				if _, err := c1.Write([]byte{1}); !errors.Is(err, ndnet.ErrWriteShutdown) {
					t.Errorf("Write after CloseWrite: %v, want ErrWriteShutdown", err)
				}
			})
		}
	}
}

// TestCloseDeliversWritten: bytes Write returned before Close reach the
// peer, then EOF; the peer's Write then fails with ErrBrokenPipe.
func TestCloseDeliversWritten(t *testing.T) {
	for _, pr := range providers {
		t.Run(pr.name, func(t *testing.T) {
			c1, c2, stop := pipe(t, pr.p(), pr.addr, small)
			defer stop()
			want := make([]byte, 200000)
			for i := range want {
				want[i] = byte(i * 7)
			}
			done := make(chan error, 1)
			go func() {
				if _, err := c1.Write(want); err != nil {
					done <- err
					return
				}
				done <- c1.Close()
			}()
			got, err := io.ReadAll(c2)
			if err != nil || !bytes.Equal(got, want) {
				t.Fatalf("ReadAll = %d bytes, %v; want %d bytes, equal", len(got), err, len(want))
			}
			if err := <-done; err != nil {
				t.Fatalf("Write or Close: %v", err)
			}
			if _, err := c2.Write([]byte("x")); !errors.Is(err, ndnet.ErrBrokenPipe) && !errors.Is(err, ndnet.ErrConnReset) {
				t.Errorf("Write to a closed peer: %v, want ErrBrokenPipe or ErrConnReset", err)
			}
			if _, err := c1.Read(make([]byte, 1)); !errors.Is(err, net.ErrClosed) {
				t.Errorf("Read after Close: %v, want net.ErrClosed", err)
			}
			if err := c1.Close(); !errors.Is(err, net.ErrClosed) {
				t.Errorf("second Close: %v, want net.ErrClosed", err)
			}
		})
	}
}

// TestDeadlineUnblocksWrite: a Write blocked on the peer's credit ends
// with os.ErrDeadlineExceeded after writing only what fit.
func TestDeadlineUnblocksWrite(t *testing.T) {
	for _, pr := range providers {
		t.Run(pr.name, func(t *testing.T) {
			c1, _, stop := pipe(t, pr.p(), pr.addr, small)
			defer stop()
			c1.SetWriteDeadline(time.Now().Add(50 * time.Millisecond))
			n, err := c1.Write(make([]byte, 1<<20))
			if !errors.Is(err, os.ErrDeadlineExceeded) {
				t.Fatalf("Write = %d, %v; want os.ErrDeadlineExceeded", n, err)
			}
			if limit := 2*64 + 4096; n > limit {
				t.Errorf("Write wrote %d bytes to a peer that reads nothing; at most %d fit", n, limit)
			}
		})
	}
}

// TestAddrs: LocalAddr and RemoteAddr mirror each other.
func TestAddrs(t *testing.T) {
	for _, pr := range providers {
		t.Run(pr.name, func(t *testing.T) {
			p := pr.p()
			c1, c2, stop := pipe(t, p, pr.addr, ndnet.Config{})
			defer stop()
			if c1.LocalAddr().String() != c2.RemoteAddr().String() || c2.LocalAddr().String() != c1.RemoteAddr().String() {
				t.Errorf("c1 %v -> %v, c2 %v -> %v", c1.LocalAddr(), c1.RemoteAddr(), c2.LocalAddr(), c2.RemoteAddr())
			}
			if got, want := c1.LocalAddr().Network(), "nd/"+p.Name(); got != want {
				t.Errorf("Network() = %q, want %q", got, want)
			}
		})
	}
}
