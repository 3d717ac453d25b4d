package ndnet_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"testing"
	"time"

	"github.com/godirect/nd/ndnet"
)

// TestPingPongBetweenProviders: a stream whose two ends live in different
// providers, as between processes (each provider then has one connection
// and polls it directly), carries thousands of round trips. Each side
// alternates between polling (a spinning Read) and sleeping in the
// completion queue's Notify, the pattern that once left a provider's
// progress goroutine asleep on a link an application poll had disarmed.
func TestPingPongBetweenProviders(t *testing.T) {
	const rounds = 3000
	for _, pv := range providers {
		if pv.name == "loop" {
			continue // one process-wide fabric per provider: no two providers meet
		}
		t.Run(pv.name, func(t *testing.T) {
			var lc ndnet.ListenConfig
			l, err := lc.Listen(pv.p(), pv.addr)
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			accepted := make(chan net.Conn, 1)
			go func() {
				c, _ := l.Accept()
				accepted <- c
			}()
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			var d ndnet.Dialer
			c1, err := d.Dial(ctx, pv.p(), l.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer c1.Close()
			c2 := <-accepted
			if c2 == nil {
				t.Fatal("Accept failed")
			}
			defer c2.Close()
			// A stall ends in a deadline error instead of a hang.
			deadline := time.Now().Add(20 * time.Second)
			c1.SetDeadline(deadline)
			c2.SetDeadline(deadline)
			echoed, pinged := make(chan error, 1), make(chan error, 1)
			go func() {
				buf := make([]byte, 64)
				for range rounds {
					if _, err := io.ReadFull(c2, buf); err != nil {
						echoed <- err
						return
					}
					if _, err := c2.Write(buf); err != nil {
						echoed <- err
						return
					}
				}
				echoed <- nil
			}()
			go func() {
				msg, got := make([]byte, 64), make([]byte, 64)
				for i := range rounds {
					msg[0], msg[63] = byte(i), byte(i>>8)
					if _, err := c1.Write(msg); err != nil {
						pinged <- fmt.Errorf("round %d: Write: %w", i, err)
						return
					}
					if _, err := io.ReadFull(c1, got); err != nil {
						pinged <- fmt.Errorf("round %d: Read: %w", i, err)
						return
					}
					if !bytes.Equal(got, msg) {
						pinged <- fmt.Errorf("round %d: echoed %x, want %x", i, got, msg)
						return
					}
				}
				pinged <- nil
			}()
			if err := <-pinged; err != nil {
				t.Fatalf("ping side: %v", err)
			}
			if err := <-echoed; err != nil {
				t.Fatalf("echo side: %v", err)
			}
		})
	}
}
