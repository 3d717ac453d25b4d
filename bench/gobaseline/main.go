// Command gobaseline is the plain Go figure that bench/compare.sh sets beside
// the RDMA libraries: a TCP ping-pong and a one-way TCP stream between two
// processes, with ordinary blocking net.Conn reads through the runtime's
// poller.
//
//	gobaseline -server -port 17001              serve one client, then exit
//	gobaseline -pingpong -size 8 -iters N ADDR   print the half round trip in usec
//	gobaseline -stream -size 65536 -iters N ADDR print the bandwidth in MB/s (2^20)
package main

import (
	"encoding/binary"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"sort"
	"time"
)

func main() {
	server := flag.Bool("server", false, "serve one client")
	port := flag.Int("port", 17001, "the port to listen on")
	pingpong := flag.Bool("pingpong", false, "measure the half round trip")
	stream := flag.Bool("stream", false, "measure one-way bandwidth")
	size := flag.Int("size", 8, "message size in bytes")
	iters := flag.Int("iters", 10000, "messages")
	flag.Parse()
	var err error
	switch {
	case *server:
		err = serve(*port)
	case *pingpong && flag.NArg() == 1:
		err = runPingPong(flag.Arg(0), *size, *iters)
	case *stream && flag.NArg() == 1:
		err = runStream(flag.Arg(0), *size, *iters)
	default:
		flag.Usage()
		os.Exit(2)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "gobaseline:", err)
		os.Exit(1)
	}
}

// The client's first 9 bytes say what it wants: mode ('p' or 's'), then
// the message size.
func serve(port int) error {
	ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
	if err != nil {
		return err
	}
	defer ln.Close()
	c, err := ln.Accept()
	if err != nil {
		return err
	}
	defer c.Close()
	var hdr [9]byte
	if _, err := io.ReadFull(c, hdr[:]); err != nil {
		return err
	}
	size := int(binary.BigEndian.Uint64(hdr[1:]))
	if hdr[0] == 's' {
		_, err = io.Copy(io.Discard, c)
		return err
	}
	buf := make([]byte, size)
	for {
		if _, err := io.ReadFull(c, buf); err != nil {
			if err == io.EOF {
				return nil
			}
			return err
		}
		if _, err := c.Write(buf); err != nil {
			return err
		}
	}
}

func dial(addr string, mode byte, size int) (net.Conn, error) {
	var c net.Conn
	var err error
	for range 100 { // the server may not listen yet
		if c, err = net.Dial("tcp", addr); err == nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil {
		return nil, err
	}
	var hdr [9]byte
	hdr[0] = mode
	binary.BigEndian.PutUint64(hdr[1:], uint64(size))
	_, err = c.Write(hdr[:])
	return c, err
}

func runPingPong(addr string, size, iters int) error {
	c, err := dial(addr, 'p', size)
	if err != nil {
		return err
	}
	defer c.Close()
	buf := make([]byte, size)
	samples := make([]time.Duration, iters)
	for i := range iters {
		t0 := time.Now()
		if _, err := c.Write(buf); err != nil {
			return err
		}
		if _, err := io.ReadFull(c, buf); err != nil {
			return err
		}
		samples[i] = time.Since(t0)
	}
	sort.Slice(samples, func(i, j int) bool { return samples[i] < samples[j] })
	fmt.Printf("%.2f\n", float64(samples[iters/2].Nanoseconds())/2/1000)
	return nil
}

func runStream(addr string, size, iters int) error {
	c, err := dial(addr, 's', size)
	if err != nil {
		return err
	}
	defer c.Close()
	buf := make([]byte, size)
	start := time.Now()
	for range iters {
		if _, err := c.Write(buf); err != nil {
			return err
		}
	}
	c.(*net.TCPConn).CloseWrite()
	io.Copy(io.Discard, c)
	elapsed := time.Since(start).Seconds()
	fmt.Printf("%.1f\n", float64(size)*float64(iters)/elapsed/(1<<20))
	return nil
}
