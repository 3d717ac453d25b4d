package ndnet_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log"
	"time"

	"github.com/godirect/nd/ndnet"
	_ "github.com/godirect/nd/provider/tcp" // registers "tcp", for the network "nd/tcp"
)

// echo copies everything c reads back to it, then ends its side of the
// stream.
func echo(c *ndnet.Conn) {
	defer c.Close()
	if _, err := io.Copy(c, c); err != nil {
		log.Print("echo: ", err)
		return
	}
	c.CloseWrite()
}

// An echo server and its client over iWARP on TCP ("nd/tcp"), as package
// net would write them: the client copies 8 MiB in with io.Copy, ends its
// side with CloseWrite, and reads the echo to the end. AcceptND returns the
// *ndnet.Conn itself, so the server's CloseWrite needs no type assertion.
func Example() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	l, err := ndnet.ListenNetwork("nd/tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	defer l.Close()
	go func() {
		for {
			c, err := l.AcceptND()
			if err != nil {
				return // the listener closed
			}
			go echo(c)
		}
	}()

	c, err := ndnet.DialNetwork(ctx, "nd/tcp", l.Addr().String())
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	data := make([]byte, 8<<20)
	for i := range data {
		data[i] = byte(i * 7)
	}
	got := make(chan []byte)
	go func() {
		b, err := io.ReadAll(c) // until the server's CloseWrite
		if err != nil {
			log.Print(err)
		}
		got <- b
	}()
	if _, err := io.Copy(c, bytes.NewReader(data)); err != nil {
		log.Fatal(err)
	}
	if err := c.CloseWrite(); err != nil {
		log.Fatal(err)
	}
	echoed := <-got
	fmt.Println(c.RemoteAddr().Network(), "echoed", len(echoed), "bytes, all equal:", bytes.Equal(echoed, data))
	// Output: nd/tcp echoed 8388608 bytes, all equal: true
}
