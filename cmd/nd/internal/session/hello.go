package session

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
	// WelcomeSize is the length of the welcome's magic and version, before what the test adds.
	WelcomeSize = 8
	// MaxServedSize bounds what a client can make the server allocate.
	MaxServedSize = 1 << 30
)

// Greeting names a test on the wire: its 4-byte magic and its command name
// for error messages.
type Greeting struct{ magic, tool string }

// NewGreeting returns the greeting of a test with the 4-byte magic and the
// command name tool.
func NewGreeting(magic, tool string) Greeting { return Greeting{magic, tool} }

// The tests' greetings.
var (
	PingGreeting         = Greeting{"NDPI", "ping"}
	PingpongGreeting     = Greeting{"NDPP", "pingpong"}
	RdmapingGreeting     = Greeting{"NDRP", "rdmaping"}
	RdmapingpongGreeting = Greeting{"NDRR", "rdmapingpong"}
)

// Hello is the client's private data.
type Hello struct {
	MaxSize int    // the largest message, 1..MaxServedSize
	Count   int64  // ping, pingpong: the messages the server will receive
	Arg     uint64 // rdmaping: the operation; rdmapingpong: -iters
}

// Hello returns the wire form of h.
func (g Greeting) Hello(h Hello) []byte {
	b := make([]byte, 0, helloSize)
	b = append(b, g.magic...)
	b = binary.BigEndian.AppendUint32(b, helloVersion)
	b = binary.BigEndian.AppendUint64(b, uint64(h.MaxSize))
	b = binary.BigEndian.AppendUint64(b, uint64(h.Count))
	return binary.BigEndian.AppendUint64(b, h.Arg)
}

// ParseHello parses and checks a client's private data.
func (g Greeting) ParseHello(b []byte) (Hello, error) {
	if len(b) < helloSize || string(b[:4]) != g.magic {
		return Hello{}, fmt.Errorf("the peer is not an nd %s client (private data %q)", g.tool, b)
	}
	if v := binary.BigEndian.Uint32(b[4:8]); v != helloVersion {
		return Hello{}, fmt.Errorf("the client speaks nd %s version %d, not %d", g.tool, v, helloVersion)
	}
	size, n := binary.BigEndian.Uint64(b[8:16]), binary.BigEndian.Uint64(b[16:24])
	if size < 1 || size > MaxServedSize || n > 1<<62 {
		return Hello{}, fmt.Errorf("the client asks for %d messages of up to %d bytes; the server takes up to %d bytes", n, size, MaxServedSize)
	}
	return Hello{MaxSize: int(size), Count: int64(n), Arg: binary.BigEndian.Uint64(b[24:32])}, nil
}

// Welcome returns the server's private data, with tail after the magic and
// the version.
func (g Greeting) Welcome(tail []byte) []byte {
	b := binary.BigEndian.AppendUint32([]byte(g.magic), helloVersion)
	return append(b, tail...)
}

// CheckWelcome checks the server's private data; what the test adds
// follows at b[WelcomeSize:].
func (g Greeting) CheckWelcome(b []byte) error {
	if len(b) < WelcomeSize || string(b[:4]) != g.magic || binary.BigEndian.Uint32(b[4:8]) != helloVersion {
		return fmt.Errorf("the peer is not an nd %s server of version %d (private data %q)", g.tool, helloVersion, b)
	}
	return nil
}
