// Command srqpeers measures many connections between two processes whose
// receiving side takes its Receives from one shared receive queue, against
// the same traffic with Receives posted per endpoint (bench/srq.sh runs it).
//
// The server accepts -n connections and posts its Receives of -size bytes
// either to one shared receive queue of -srq entries, or -recvs to each
// endpoint (-srq 0), every buffer its own memory. The client keeps -window
// messages in flight, at most one per connection: window slot k sends to
// the connections k, k+window, k+2*window, ... in turn, the next one when
// the server has acknowledged the last (an 8-byte Send back, after the
// server reposted the Receive). Every message carries its connection's
// number in its first 4 bytes. The client runs for -d seconds after a
// warm-up of one message per connection and prints the message rate; the
// server, when the client says done, prints the bytes of Receive buffers it
// posted and its peak resident memory. Both print one line of key=value.
//
//	srqpeers -provider tcp -server -p 18600 -n 1000 -srq 256 &
//	srqpeers -provider tcp -p 18600 -n 1000 -window 256 -d 5
package main

import (
	"context"
	"encoding/binary"
	"flag"
	"fmt"
	"net/netip"
	"os"
	"time"

	"github.com/godirect/nd"
	"github.com/godirect/nd/provider/shm"
	"github.com/godirect/nd/provider/tcp"
)

const (
	ackSize = 8
	doneTag = 0xffffffff // the connection number of the client's last message
)

type config struct {
	provider string
	server   bool
	port     int
	n        int
	size     int
	srq      int
	recvs    int
	window   int
	seconds  float64
	timeout  time.Duration
}

func main() {
	var c config
	flag.StringVar(&c.provider, "provider", "tcp", "tcp or shm")
	flag.BoolVar(&c.server, "server", false, "run the receiving side")
	flag.IntVar(&c.port, "p", 18600, "the server's port")
	flag.IntVar(&c.n, "n", 1000, "connections")
	flag.IntVar(&c.size, "size", 64<<10, "message and Receive size in bytes")
	flag.IntVar(&c.srq, "srq", 256, "server: Receives of one shared receive queue (0: -recvs per endpoint)")
	flag.IntVar(&c.recvs, "recvs", 16, "server with -srq 0: Receives per endpoint")
	flag.IntVar(&c.window, "window", 256, "client: messages in flight over all connections")
	flag.Float64Var(&c.seconds, "d", 5, "client: seconds measured")
	flag.DurationVar(&c.timeout, "timeout", 5*time.Minute, "give up after this long")
	flag.Parse()
	ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
	defer cancel()
	var err error
	if c.server {
		err = serve(ctx, c)
	} else {
		err = run(ctx, c)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "srqpeers:", err)
		os.Exit(1)
	}
}

func open(c config) (nd.Adapter, netip.Addr, error) {
	var p nd.Provider
	switch c.provider {
	case "tcp":
		p = tcp.New(tcp.DefaultConfig())
	case "shm":
		p = shm.New(shm.DefaultConfig())
	default:
		return nil, netip.Addr{}, fmt.Errorf("unknown provider %q", c.provider)
	}
	addr := netip.MustParseAddr("127.0.0.1")
	if c.provider == "shm" {
		addrs, err := p.Addresses()
		if err != nil || len(addrs) == 0 {
			return nil, netip.Addr{}, fmt.Errorf("shm addresses: %v", err)
		}
		addr = addrs[0]
	}
	a, err := p.OpenAdapter(addr)
	return a, addr, err
}

func register(ctx context.Context, a nd.Adapter, n int) ([]byte, nd.MemoryRegion, error) {
	b := make([]byte, n)
	mr, err := a.RegisterMemory(ctx, b)
	if err != nil {
		return nil, nil, fmt.Errorf("RegisterMemory(%d): %w", n, err)
	}
	return b, mr, nil
}

// receive is one posted Receive of the server.
type receive struct {
	sgl []nd.SGE
	ep  int // -1: on the shared receive queue
}

func serve(ctx context.Context, c config) error {
	a, _, err := open(c)
	if err != nil {
		return err
	}
	defer a.Close()
	nrecv := c.srq
	if c.srq == 0 {
		nrecv = c.n * c.recvs
	}
	cq, err := a.CreateCompletionQueue(nrecv + 2*c.n)
	if err != nil {
		return err
	}
	var srq nd.SharedReceiveQueue
	if c.srq > 0 {
		if srq, err = nd.CreateSharedReceiveQueue(a, cq, nd.SharedReceiveQueueLimits{Entries: c.srq, SGE: 1}); err != nil {
			return err
		}
	}
	// Every Receive has a buffer of its own, as an application keeping
	// them posted would.
	buf, mr, err := register(ctx, a, nrecv*c.size)
	if err != nil {
		return err
	}
	recvs := make([]nd.Result, nrecv)
	info := make([]receive, nrecv)
	index := make(map[*nd.Result]int, nrecv+c.n)
	for k := range recvs {
		info[k] = receive{sgl: []nd.SGE{{Buffer: buf[k*c.size : (k+1)*c.size], Region: mr}}, ep: -1}
		index[&recvs[k]] = k
	}
	ackBuf, ackMR, err := register(ctx, a, ackSize)
	if err != nil {
		return err
	}
	ackSGL := []nd.SGE{{Buffer: ackBuf, Region: ackMR}}
	acks := make([]nd.Result, c.n)
	l, err := a.Listen(0, 0, uint16(c.port))
	if err != nil {
		return err
	}
	defer l.Close()
	fmt.Printf("listening port=%d\n", l.Port())
	limits := nd.EndpointLimits{InboundEntries: max(c.recvs, 1), OutboundEntries: 2, InboundSGE: 1, OutboundSGE: 1}
	eps := make([]nd.Endpoint, c.n)
	if srq != nil {
		for k := range recvs {
			if err := srq.Receive(&recvs[k], info[k].sgl); err != nil {
				return fmt.Errorf("shared Receive: %w", err)
			}
		}
	}
	for i := range c.n {
		conn, err := a.CreateConnector()
		if err != nil {
			return err
		}
		if err := l.GetConnectionRequest(ctx, conn); err != nil {
			return fmt.Errorf("connection %d: %w", i, err)
		}
		if srq != nil {
			eps[i], err = nd.CreateEndpointWithSRQ(conn, cq, cq, srq, limits)
		} else {
			eps[i], err = conn.CreateEndpoint(cq, cq, limits)
		}
		if err != nil {
			return fmt.Errorf("connection %d: %w", i, err)
		}
		if srq == nil {
			for k := i * c.recvs; k < (i+1)*c.recvs; k++ {
				info[k].ep = i
				if err := eps[i].Receive(&recvs[k], info[k].sgl); err != nil {
					return fmt.Errorf("posting a Receive: %w", err)
				}
			}
		}
		if err := conn.Accept(ctx, eps[i], nil); err != nil {
			return fmt.Errorf("connection %d: Accept: %w", i, err)
		}
	}
	out := make([]*nd.Result, 64)
	var msgs int64
	for {
		if ctx.Err() != nil {
			return fmt.Errorf("after %d messages: %w", msgs, ctx.Err())
		}
		m := cq.GetResults(out)
		if m == 0 {
			if err := idle(ctx, cq); err != nil {
				return err
			}
			continue
		}
		for _, r := range out[:m] {
			k, ok := index[r]
			if !ok { // an acknowledgement's Send
				if r.Status != nd.Success {
					return fmt.Errorf("an acknowledgement completed %v", r.Status)
				}
				continue
			}
			if r.Status != nd.Success {
				return fmt.Errorf("a Receive completed %v after %d messages", r.Status, msgs)
			}
			conn := binary.LittleEndian.Uint32(info[k].sgl[0].Buffer)
			if conn == doneTag {
				report(c, nrecv, msgs)
				return nil
			}
			if int(conn) >= c.n {
				return fmt.Errorf("a message names connection %d", conn)
			}
			msgs++
			if srq != nil {
				err = srq.Receive(r, info[k].sgl)
			} else {
				err = eps[info[k].ep].Receive(r, info[k].sgl)
			}
			if err != nil {
				return fmt.Errorf("reposting a Receive: %w", err)
			}
			if err := eps[conn].Send(&acks[conn], ackSGL, nd.FlagSilentSuccess); err != nil {
				return fmt.Errorf("acknowledging on connection %d: %w", conn, err)
			}
		}
	}
}

// spinPolls is how many empty polls a side makes before it blocks in
// Notify: both processes poll, and on a host with few cores a side that
// only polls starves the transport's own goroutines and its peer.
const spinPolls = 64

var empty int

// idle counts an empty poll and, after spinPolls of them, waits in Notify
// for the next completion.
func idle(ctx context.Context, cq nd.CompletionQueue) error {
	empty++
	if empty < spinPolls {
		return nil
	}
	empty = 0
	return cq.Notify(ctx, nd.NotifyAny)
}

// report prints the server's line: the Receive buffers posted and the peak
// resident memory of the process.
func report(c config, nrecv int, msgs int64) {
	mode := "endpoint"
	if c.srq > 0 {
		mode = "srq"
	}
	fmt.Printf("side=server provider=%s mode=%s connections=%d receives=%d recv_buf_bytes=%d max_rss_kib=%d messages=%d\n",
		c.provider, mode, c.n, nrecv, nrecv*c.size, maxRSSKiB(), msgs)
}

func run(ctx context.Context, c config) error {
	a, addr, err := open(c)
	if err != nil {
		return err
	}
	defer a.Close()
	window := min(c.window, c.n)
	cq, err := a.CreateCompletionQueue(4 * c.n)
	if err != nil {
		return err
	}
	limits := nd.EndpointLimits{InboundEntries: 2, OutboundEntries: 2, InboundSGE: 1, OutboundSGE: 1}
	eps := make([]nd.Endpoint, c.n)
	ackBuf, ackMR, err := register(ctx, a, c.n*ackSize)
	if err != nil {
		return err
	}
	acks := make([]nd.Result, c.n)
	ackSGL := make([][]nd.SGE, c.n)
	index := make(map[*nd.Result]int, c.n)
	remote := netip.AddrPortFrom(addr, uint16(c.port))
	for i := range c.n {
		conn, err := a.CreateConnector()
		if err != nil {
			return err
		}
		if eps[i], err = conn.CreateEndpoint(cq, cq, limits); err != nil {
			return err
		}
		ackSGL[i] = []nd.SGE{{Buffer: ackBuf[i*ackSize : (i+1)*ackSize], Region: ackMR}}
		index[&acks[i]] = i
		if err := eps[i].Receive(&acks[i], ackSGL[i]); err != nil {
			return err
		}
		if err := conn.Connect(ctx, eps[i], remote, 0, 0, nil); err != nil {
			return fmt.Errorf("connection %d: %w", i, err)
		}
		if err := conn.CompleteConnect(ctx); err != nil {
			return fmt.Errorf("connection %d: %w", i, err)
		}
	}
	// One message buffer per window slot; slot k serves the connections
	// congruent to k.
	msgBuf, msgMR, err := register(ctx, a, window*c.size)
	if err != nil {
		return err
	}
	sends := make([]nd.Result, window)
	msgSGL := make([][]nd.SGE, window)
	for k := range window {
		msgSGL[k] = []nd.SGE{{Buffer: msgBuf[k*c.size : (k+1)*c.size], Region: msgMR}}
	}
	send := func(conn int) error {
		k := conn % window
		binary.LittleEndian.PutUint32(msgSGL[k][0].Buffer, uint32(conn))
		return eps[conn].Send(&sends[k], msgSGL[k], nd.FlagSilentSuccess)
	}
	out := make([]*nd.Result, 64)
	// await reaps acknowledgements until want more arrived, calling next
	// for each with its connection.
	await := func(want int, next func(conn int) error) error {
		for got := 0; got < want; {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			m := cq.GetResults(out)
			if m == 0 {
				if err := idle(ctx, cq); err != nil {
					return err
				}
				continue
			}
			for _, r := range out[:m] {
				i, ok := index[r]
				if !ok || r.Status != nd.Success {
					return fmt.Errorf("a completion %v (acknowledgement %v)", r.Status, ok)
				}
				got++
				if err := eps[i].Receive(r, ackSGL[i]); err != nil {
					return err
				}
				if err := next(i); err != nil {
					return err
				}
			}
		}
		return nil
	}
	// Warm-up: one message over every connection, window at a time.
	for start := 0; start < c.n; start += window {
		end := min(start+window, c.n)
		for i := start; i < end; i++ {
			if err := send(i); err != nil {
				return err
			}
		}
		if err := await(end-start, func(int) error { return nil }); err != nil {
			return fmt.Errorf("warm-up: %w", err)
		}
	}
	for k := range window {
		if err := send(k); err != nil {
			return err
		}
	}
	var msgs, measured int64
	deadline := time.Now().Add(time.Duration(c.seconds * float64(time.Second)))
	begin := time.Now()
	stopping := false
	inFlight := window
	var elapsed time.Duration
	for inFlight > 0 {
		err := await(1, func(conn int) error {
			msgs++
			inFlight--
			if !stopping && msgs%256 == 0 && time.Now().After(deadline) {
				stopping = true
				elapsed, measured = time.Since(begin), msgs
			}
			if stopping {
				return nil
			}
			next := conn + window
			if next >= c.n {
				next = conn % window
			}
			inFlight++
			return send(next)
		})
		if err != nil {
			return fmt.Errorf("after %d messages: %w", msgs, err)
		}
	}
	if elapsed == 0 {
		elapsed, measured = time.Since(begin), msgs
	}
	fmt.Printf("side=client provider=%s connections=%d window=%d size=%d messages=%d seconds=%.3f msg_per_s=%.0f\n",
		c.provider, c.n, window, c.size, measured, elapsed.Seconds(), float64(measured)/elapsed.Seconds())
	binary.LittleEndian.PutUint32(msgSGL[0][0].Buffer, doneTag)
	if err := eps[0].Send(&sends[0], msgSGL[0], 0); err != nil {
		return err
	}
	for {
		m := cq.GetResults(out)
		for _, r := range out[:m] {
			if r == &sends[0] {
				return nil
			}
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
}
