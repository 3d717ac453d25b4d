package main

// The private data of the data tests' connections. The client's Connect
// carries a hello: the test's magic, the version, the largest message and
// two numbers the test defines, so that the server can size its buffers and
// knows what the test will do. The server's Accept answers a welcome: the
// magic and the version, and what the test adds. Everything is big-endian.

import (
	"encoding/binary"
	"fmt"
)

const (
	helloVersion = 3 // 3: nd pingpong's count 0, until a message of 0 bytes
	helloSize    = 32
	welcomeSize  = 8
	// maxServedSize bounds what a client can make the server allocate.
	maxServedSize = 1 << 30
)

// greeting names a test on the wire: its 4-byte magic and its command name
// for error messages.
type greeting struct{ magic, tool string }

// The tests' greetings.
var (
	pingGreeting         = greeting{"NDPI", "ping"}
	pingpongGreeting     = greeting{"NDPP", "pingpong"}
	rdmapingGreeting     = greeting{"NDRP", "rdmaping"}
	rdmapingpongGreeting = greeting{"NDRR", "rdmapingpong"}
)

// hello is the client's private data.
type hello struct {
	maxSize int    // the largest message, 1..maxServedSize
	count   int64  // ping, pingpong: the messages the server will receive
	arg     uint64 // rdmaping: the operation; rdmapingpong: -iters
}

// hello returns the wire form of h.
func (g greeting) hello(h hello) []byte {
	b := make([]byte, 0, helloSize)
	b = append(b, g.magic...)
	b = binary.BigEndian.AppendUint32(b, helloVersion)
	b = binary.BigEndian.AppendUint64(b, uint64(h.maxSize))
	b = binary.BigEndian.AppendUint64(b, uint64(h.count))
	return binary.BigEndian.AppendUint64(b, h.arg)
}

// parseHello parses and checks a client's private data.
func (g greeting) parseHello(b []byte) (hello, error) {
	if len(b) < helloSize || string(b[:4]) != g.magic {
		return hello{}, fmt.Errorf("the peer is not an nd %s client (private data %q)", g.tool, b)
	}
	if v := binary.BigEndian.Uint32(b[4:8]); v != helloVersion {
		return hello{}, fmt.Errorf("the client speaks nd %s version %d, not %d", g.tool, v, helloVersion)
	}
	size, n := binary.BigEndian.Uint64(b[8:16]), binary.BigEndian.Uint64(b[16:24])
	if size < 1 || size > maxServedSize || n > 1<<62 {
		return hello{}, fmt.Errorf("the client asks for %d messages of up to %d bytes; the server takes up to %d bytes", n, size, maxServedSize)
	}
	return hello{maxSize: int(size), count: int64(n), arg: binary.BigEndian.Uint64(b[24:32])}, nil
}

// welcome returns the server's private data, with tail after the magic and
// the version.
func (g greeting) welcome(tail []byte) []byte {
	b := binary.BigEndian.AppendUint32([]byte(g.magic), helloVersion)
	return append(b, tail...)
}

// checkWelcome checks the server's private data; what the test adds
// follows at b[welcomeSize:].
func (g greeting) checkWelcome(b []byte) error {
	if len(b) < welcomeSize || string(b[:4]) != g.magic || binary.BigEndian.Uint32(b[4:8]) != helloVersion {
		return fmt.Errorf("the peer is not an nd %s server of version %d (private data %q)", g.tool, helloVersion, b)
	}
	return nil
}
