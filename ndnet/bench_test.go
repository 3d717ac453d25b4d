package ndnet_test

import (
	"io"
	"testing"
	"time"

	"github.com/godirect/nd/ndnet"
)

// BenchmarkPingPong: a 64-byte round trip between two Conns of one process.
func BenchmarkPingPong(b *testing.B) {
	for _, pr := range providers {
		b.Run(pr.name, func(b *testing.B) {
			c1, c2, stop := pipe(b, pr.p(), pr.addr, benchConfig)
			defer stop()
			go func() {
				buf := make([]byte, 64)
				for {
					if _, err := io.ReadFull(c2, buf); err != nil {
						return
					}
					if _, err := c2.Write(buf); err != nil {
						return
					}
				}
			}()
			buf := make([]byte, 64)
			for b.Loop() {
				c1.Write(buf)
				io.ReadFull(c1, buf)
			}
		})
	}
}

// BenchmarkCopy: io.Copy-style 1 MiB writes one way.
func BenchmarkCopy(b *testing.B) {
	for _, pr := range providers {
		b.Run(pr.name, func(b *testing.B) {
			c1, c2, stop := pipe(b, pr.p(), pr.addr, benchConfig)
			defer stop()
			done := make(chan struct{})
			go func() {
				defer close(done)
				buf := make([]byte, 1<<20)
				for {
					if _, err := c2.Read(buf); err != nil {
						return
					}
				}
			}()
			buf := make([]byte, 1<<20)
			b.SetBytes(int64(len(buf)))
			for b.Loop() {
				c1.Write(buf)
			}
			c1.CloseWrite()
			<-done
		})
	}
}

var benchConfig = ndnet.Config{Spin: 200 * time.Microsecond}
