// Command ndnet-perf measures a byte stream between two processes: 64-byte
// ping-pong latency and io.Copy throughput, over an ndnet stream on an ND
// provider and, for comparison, over a Unix domain socket and loopback TCP.
//
//	ndnet-perf -transport shm -test lat            # server in a child process
//	ndnet-perf -transport unix -test bw -size 1M
//	ndnet-perf -s -transport tcp -addr 127.0.0.1:7000 & ndnet-perf -c 127.0.0.1:7000 -transport tcp
//
// It prints one line: transport, test, size, the figure (half round trip in
// microseconds, or GB/s) and the iterations. -D bounds bw's stream by time
// instead of a count. -test copy streams -bytes pseudo-random bytes (or
// what -D allows) with io.Copy and has the server hash what it read: the
// line ends with the SHA-256 check, and the exit status is 1 when the
// digests or the counts differ.
package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/godirect/nd"
	"github.com/godirect/nd/ndnet"
	_ "github.com/godirect/nd/provider/loop"
	_ "github.com/godirect/nd/provider/shm"
	_ "github.com/godirect/nd/provider/tcp"
)

func main() {
	transport := flag.String("transport", "shm", "`name`: an ND provider (shm, tcp) for an ndnet stream, or unix or net-tcp for a plain socket")
	test := flag.String("test", "lat", "lat (ping-pong), bw (one-way io.Copy) or copy (io.Copy of pseudo-random bytes, SHA-256 checked at the far end)")
	flag.Var(&copyBytes, "bytes", "copy: the bytes to stream (suffixes K, M, G; default 256M)")
	flag.DurationVar(&streamFor, "D", 0, "bw and copy: stop writing after this `duration` (copy: or after -bytes)")
	size := flag.String("size", "", "message size for lat, write size for bw (default 64 and 1M)")
	iters := flag.Int("iters", 0, "ping-pongs, or writes (default 20000 and 2000)")
	serve := flag.Bool("s", false, "serve until standard input closes, printing the address")
	connect := flag.String("c", "", "connect to a server at `address`")
	addr := flag.String("addr", "", "the server's address (default 127.0.0.1:0, or a socket in a temporary directory)")
	flag.DurationVar(&streamConfig.Spin, "spin", 0, "the longest a blocked Read or Write of an ndnet stream polls before it sleeps (0: the default; the window adapts below it)")
	flag.Parse()
	if err := run(*transport, *test, *size, *iters, *serve, *connect, *addr); err != nil {
		fmt.Fprintln(os.Stderr, "ndnet-perf:", err)
		os.Exit(1)
	}
}

func run(transport, test, sizeArg string, iters int, serve bool, connect, addr string) error {
	if serve {
		l, err := listen(transport, addr)
		if err != nil {
			return err
		}
		fmt.Println(l.Addr().String())
		go func() {
			for {
				c, err := l.Accept()
				if err != nil {
					return
				}
				go handle(c)
			}
		}()
		io.Copy(io.Discard, os.Stdin)
		return nil
	}
	if sizeArg == "" {
		sizeArg = map[string]string{"lat": "64", "bw": "1M", "copy": "1M"}[test]
	}
	size, err := parseSize(sizeArg)
	if err != nil {
		return err
	}
	if iters == 0 {
		iters = map[string]int{"lat": 20000, "bw": 2000}[test]
	}
	if connect == "" {
		srv, err := startServer(transport)
		if err != nil {
			return err
		}
		defer srv.stop()
		connect = srv.addr
	}
	c, err := dial(transport, connect)
	if err != nil {
		return err
	}
	defer c.Close()
	switch test {
	case "lat":
		d, err := pingPong(c, size, iters)
		if err != nil {
			return err
		}
		fmt.Printf("%s lat %d %.2f us %d\n", transport, size, float64(d.Nanoseconds())/float64(iters)/2/1000, iters)
	case "bw":
		d, n, err := stream(c, size, iters)
		if err != nil {
			return err
		}
		fmt.Printf("%s bw %d %.4f GB/s %d\n", transport, size, float64(size)*float64(n)/d.Seconds()/1e9, n)
	case "copy":
		return checkedCopy(c, transport, size)
	default:
		return fmt.Errorf("unknown test %q", test)
	}
	return nil
}

func parseSize(s string) (int, error) {
	mult := 1
	switch {
	case strings.HasSuffix(s, "K"):
		mult, s = 1<<10, strings.TrimSuffix(s, "K")
	case strings.HasSuffix(s, "M"):
		mult, s = 1<<20, strings.TrimSuffix(s, "M")
	case strings.HasSuffix(s, "G"):
		mult, s = 1<<30, strings.TrimSuffix(s, "G")
	}
	n, err := strconv.Atoi(s)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("bad size %q", s)
	}
	return n * mult, nil
}

func provider(name string) (nd.Provider, error) { return nd.OpenProvider(name) }

func listen(transport, addr string) (net.Listener, error) {
	switch transport {
	case "unix":
		if addr == "" {
			dir, err := os.MkdirTemp("", "ndnet-perf")
			if err != nil {
				return nil, err
			}
			addr = filepath.Join(dir, "sock")
		}
		return net.Listen("unix", addr)
	case "net-tcp":
		if addr == "" {
			addr = "127.0.0.1:0"
		}
		return net.Listen("tcp", addr)
	}
	p, err := provider(transport)
	if err != nil {
		return nil, err
	}
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	lc := ndnet.ListenConfig{Config: streamConfig}
	return lc.Listen(p, addr)
}

// streamConfig configures the ndnet streams on both sides.
var streamConfig ndnet.Config

func dial(transport, addr string) (net.Conn, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	switch transport {
	case "unix":
		return net.Dial("unix", addr)
	case "net-tcp":
		return net.Dial("tcp", addr)
	}
	p, err := provider(transport)
	if err != nil {
		return nil, err
	}
	d := ndnet.Dialer{Config: streamConfig}
	return d.Dial(ctx, p, addr)
}

// The client opens each connection with a request: the test (one byte)
// and the size (four bytes).
func handle(c net.Conn) {
	defer c.Close()
	var req [5]byte
	if _, err := io.ReadFull(c, req[:]); err != nil {
		return
	}
	size := int(binary.BigEndian.Uint32(req[1:]))
	buf := make([]byte, size)
	switch req[0] {
	case 'L': // echo each message
		for {
			if _, err := io.ReadFull(c, buf); err != nil {
				return
			}
			if _, err := c.Write(buf); err != nil {
				return
			}
		}
	case 'B': // read to EOF, then answer one byte
		if _, err := io.CopyBuffer(io.Discard, struct{ io.Reader }{c}, buf); err != nil {
			return
		}
		c.Write([]byte{1})
	case 'C': // read to EOF, then answer the SHA-256 and the count
		h := sha256.New()
		n, err := io.CopyBuffer(h, struct{ io.Reader }{c}, buf)
		if err != nil {
			fmt.Fprintf(os.Stderr, "ndnet-perf: copy: reading after %d bytes: %v\n", n, err)
			return
		}
		var answer [sha256.Size + 8]byte
		h.Sum(answer[:0])
		binary.BigEndian.PutUint64(answer[sha256.Size:], uint64(n))
		c.Write(answer[:])
	}
}

func request(c net.Conn, test byte, size int) error {
	var req [5]byte
	req[0] = test
	binary.BigEndian.PutUint32(req[1:], uint32(size))
	_, err := c.Write(req[:])
	return err
}

// pingPong times iters round trips of size bytes, after a warm-up.
func pingPong(c net.Conn, size, iters int) (time.Duration, error) {
	if err := request(c, 'L', size); err != nil {
		return 0, err
	}
	buf := make([]byte, size)
	round := func() error {
		if _, err := c.Write(buf); err != nil {
			return err
		}
		_, err := io.ReadFull(c, buf)
		return err
	}
	for range min(iters, 1000) {
		if err := round(); err != nil {
			return 0, err
		}
	}
	start := time.Now()
	for range iters {
		if err := round(); err != nil {
			return 0, err
		}
	}
	return time.Since(start), nil
}

// The -bytes and -D flags.
var (
	copyBytes = byteCount(256 << 20)
	streamFor time.Duration
)

// byteCount is a flag.Value for a number of bytes with an optional K, M
// or G suffix.
type byteCount int64

func (b *byteCount) String() string { return strconv.FormatInt(int64(*b), 10) }

func (b *byteCount) Set(s string) error {
	n, err := parseSize(s)
	*b = byteCount(n)
	return err
}

// blocks is a reader of at most left blocks (-1: any number) until the
// deadline, if any; n counts the blocks read.
type blocks struct {
	left     int
	deadline time.Time
	n        int
}

func (b *blocks) Read(p []byte) (int, error) {
	if b.left == 0 || !b.deadline.IsZero() && b.n%16 == 0 && time.Now().After(b.deadline) {
		return 0, io.EOF
	}
	b.left--
	b.n++
	return len(p), nil
}

// stream times io.CopyBuffer of iters writes of size bytes (with -D: as
// many as it allows) and the server's answer that it read them all, and
// returns the time and the writes.
func stream(c net.Conn, size, iters int) (time.Duration, int, error) {
	if err := request(c, 'B', size); err != nil {
		return 0, 0, err
	}
	buf := make([]byte, size)
	src := &blocks{left: iters}
	start := time.Now()
	if streamFor > 0 {
		src.left, src.deadline = -1, start.Add(streamFor)
	}
	if _, err := io.CopyBuffer(struct{ io.Writer }{c}, src, buf); err != nil {
		return 0, 0, err
	}
	if err := closeWrite(c); err != nil {
		return 0, 0, err
	}
	if _, err := io.ReadFull(c, buf[:1]); err != nil {
		return 0, 0, err
	}
	return time.Since(start), src.n, nil
}

// closeWrite ends c's outbound stream.
func closeWrite(c net.Conn) error {
	type closeWriter interface{ CloseWrite() error }
	cw, ok := c.(closeWriter)
	if !ok {
		return errors.New("the connection has no CloseWrite")
	}
	return cw.CloseWrite()
}

// deadlineReader reads r until the deadline (if any) passes.
type deadlineReader struct {
	r        io.Reader
	deadline time.Time
}

func (d *deadlineReader) Read(p []byte) (int, error) {
	if !d.deadline.IsZero() && time.Now().After(d.deadline) {
		return 0, io.EOF
	}
	return d.r.Read(p)
}

// checkedCopy streams -bytes pseudo-random bytes (or what -D allows) to
// the server with io.CopyBuffer in writes of size bytes, hashing them on
// the way, and compares the SHA-256 and the count the server answers.
func checkedCopy(c net.Conn, transport string, size int) error {
	if err := request(c, 'C', size); err != nil {
		return err
	}
	var seed [32]byte
	binary.BigEndian.PutUint64(seed[:], uint64(time.Now().UnixNano()))
	h := sha256.New()
	src := &deadlineReader{r: io.LimitReader(rand.NewChaCha8(seed), int64(copyBytes))}
	start := time.Now()
	if streamFor > 0 {
		src.deadline = start.Add(streamFor)
	}
	n, err := io.CopyBuffer(struct{ io.Writer }{c}, io.TeeReader(src, h), make([]byte, size))
	if err != nil {
		return fmt.Errorf("copy: writing after %d bytes: %w", n, err)
	}
	if err := closeWrite(c); err != nil {
		return err
	}
	var answer [sha256.Size + 8]byte
	if _, err := io.ReadFull(c, answer[:]); err != nil {
		return fmt.Errorf("copy: the server's digest after %d bytes: %w", n, err)
	}
	d := time.Since(start)
	got := binary.BigEndian.Uint64(answer[sha256.Size:])
	ok := bytes.Equal(h.Sum(nil), answer[:sha256.Size]) && got == uint64(n)
	verdict := "sha256 ok"
	if !ok {
		verdict = fmt.Sprintf("MISMATCH: the server read %d bytes with another SHA-256", got)
	}
	fmt.Printf("%s copy %d %.4f GB/s %d bytes, %s\n", transport, size, float64(n)/d.Seconds()/1e9, n, verdict)
	if !ok {
		return errors.New("the bytes the server read are not the bytes written")
	}
	return nil
}

// server is a server child process.
type server struct {
	cmd   *exec.Cmd
	stdin io.Closer
	addr  string
}

func startServer(transport string) (*server, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(self, "-s", "-transport", transport, "-spin", streamConfig.Spin.String())
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		cmd.Process.Kill()
		cmd.Wait()
		return nil, fmt.Errorf("server: %w", err)
	}
	return &server{cmd: cmd, stdin: stdin, addr: strings.TrimSpace(line)}, nil
}

func (s *server) stop() {
	s.stdin.Close()
	s.cmd.Wait()
}
