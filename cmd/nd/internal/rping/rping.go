package rping

// nd rping: rdma-core's rping (librdmacm/examples/rping.c), wire-compatible
// with it. Per ping the client advertises its start buffer in a 16-byte
// struct rping_rdma_info { __be64 buf; __be32 rkey; __be32 size; }, the
// server RDMA-Reads it and sends a 16-byte go-ahead, the client advertises
// its rdma buffer, the server RDMA-Writes the data back and sends the second
// go-ahead. Each side keeps exactly one Receive posted, as rping does, and
// never has two Sends in flight toward the peer.

import (
	"bytes"
	"context"
	"encoding/binary"
	"flag"
	"fmt"
	"io"
	"net"
	"net/netip"

	"github.com/godirect/nd"
	"github.com/godirect/nd/cmd/nd/internal/cli"
	"github.com/godirect/nd/cmd/nd/internal/datapath"
	"github.com/godirect/nd/cmd/nd/internal/session"
	"github.com/godirect/nd/provider/tcp"
)

// rping's constants.
const (
	rpingPort        = 7174  // rping's default port
	rpingDefaultSize = 64    // -S default
	rpingMinSize     = 23    // RPING_MIN_BUFSIZE (see below)
	rpingMaxSize     = 65535 // RPING_BUFSIZE - 1
	rpingInfoSize    = 16    // sizeof(struct rping_rdma_info)
	rpingSendDepth   = 16    // RPING_SQ_DEPTH
	rpingRecvDepth   = 2     // rping's max_recv_wr (it keeps one posted)
	rpingFirstLetter = 65    // 'A': the first letter of the ping pattern
	rpingLastLetter  = 122   // 'z': the pattern wraps after it
)

// rping's RPING_MIN_BUFSIZE is sizeof(stringify(INT_MAX)) +
// sizeof(RPING_MSG_FMT), meant as the room for "rdma-ping-%d: " with the
// largest int; but rping.c includes no <limits.h> (nor do its headers), so
// INT_MAX is no macro there, stringify gives "INT_MAX" and the minimum is
// 8 + 15 = 23 bytes: rping -S 22 says "Invalid size 22 (valid range is 23
// to 65536)" (rdma-core 44) and -S 23 runs. A prefix longer than the
// buffer is cut, as snprintf cuts it (FillPing). rping compares a negative
// -S as unsigned, lets it pass and then fails to allocate it; nd rping
// refuses it.

// rpingConfig is the parsed command line of nd rping.
type rpingConfig struct {
	provider       string
	server, client bool
	addr           string // -a, "" if not given
	port           uint   // -p
	count          int    // -C: pings (0: until interrupted)
	size           int    // -S: ping data size
	verbose        bool   // -v: print the ping data
	validate       bool   // -V: verify the ping data
	crc            bool   // -crc: ask for MPA CRC (tcp provider)

	// Listening, if not nil, is called with the server's address once it
	// listens (tests use it with -p 0).
	Listening func(netip.AddrPort)
}

// Flags defines the flags of nd rping.
func Flags(stdout, stderr io.Writer) (*flag.FlagSet, cli.RunFunc) {
	fs, c := NewFlagSet()
	return fs, func(ctx context.Context, args []string) error {
		if len(args) > 0 {
			return cli.Usagef("unexpected arguments %q (the address is given with -a)", args)
		}
		return c.Run(ctx, stdout)
	}
}

// NewFlagSet returns nd rping's FlagSet and the configuration its
// parsing fills in.
func NewFlagSet() (*flag.FlagSet, *rpingConfig) {
	fs := flag.NewFlagSet("rping", flag.ContinueOnError)
	c := &rpingConfig{}
	fs.StringVar(&c.provider, "provider", tcp.Name, "the ND provider to use, by `name` (one of: "+session.ProviderList()+")")
	fs.BoolVar(&c.server, "s", false, "server side: serve one connection, then exit")
	fs.BoolVar(&c.client, "c", false, "client side: connect to -a ADDR")
	fs.StringVar(&c.addr, "a", "", "the `address` to bind to (server; default: every address) or connect to (client)")
	fs.UintVar(&c.port, "p", rpingPort, "the `port` to listen on or connect to")
	c.size = rpingDefaultSize
	fs.Var((*cli.CInt)(&c.count), "C", "ping `count` (0: until interrupted or -timeout); on the server, the pings expected")
	fs.Var((*cli.CInt)(&c.size), "S", fmt.Sprintf("ping data `size` in bytes (%d to %d)", rpingMinSize, rpingMaxSize))
	fs.BoolVar(&c.verbose, "v", false, "print the ping data")
	fs.BoolVar(&c.validate, "V", false, "verify the ping data")
	fs.BoolVar(&c.crc, "crc", false, "ask for MPA CRC32c on the connection (tcp provider only)")
	fs.Usage = func() {
		w := fs.Output()
		fmt.Fprintln(w, "Usage: nd rping -s [-v] [-V] [-S SIZE] [-C COUNT] [-a ADDR] [-p PORT] [-provider NAME] [-crc]")
		fmt.Fprintln(w, "       nd rping -c [-v] [-V] [-S SIZE] [-C COUNT] -a ADDR [-p PORT] [-provider NAME] [-crc]")
		fmt.Fprintln(w)
		fmt.Fprintln(w, "rdma-core's rping over an ND provider, wire-compatible with rping over")
		fmt.Fprintln(w, "soft-iWARP. Per ping the client advertises a buffer, the server RDMA-Reads")
		fmt.Fprintln(w, "it, the client advertises a second buffer and the server RDMA-Writes the")
		fmt.Fprintln(w, "data back into it. The server serves one connection and exits. Both sides")
		fmt.Fprintln(w, "exit 0 only if every ping succeeded (and, with -V, verified): the client")
		fmt.Fprintln(w, "compares the data written back with what it sent, the server checks the")
		fmt.Fprintln(w, "data it read against rping's pattern. Flags cannot be combined (-v -V,")
		fmt.Fprintln(w, "not -vV). -S and -C read their numbers as rping does (C's atoi: leading")
		fmt.Fprintln(w, "blanks and a sign, decimal digits up to the first other character).")
		fmt.Fprintln(w)
		fmt.Fprintln(w, "Flags:")
		fs.PrintDefaults()
	}
	return fs, c
}

// Run checks the configuration and runs the server or the client.
func (c *rpingConfig) Run(ctx context.Context, out io.Writer) error {
	switch {
	case c.server && c.client:
		return cli.Usagef("-s and -c exclude each other")
	case !c.server && !c.client:
		return cli.Usagef("give -s (server) or -c (client)")
	case c.client && c.addr == "":
		return cli.Usagef("-c needs the server's address (-a ADDR)")
	case c.port > 65535 || (c.client && c.port == 0):
		return cli.Usagef("-p %d: not a port", c.port)
	case c.size < rpingMinSize || c.size > rpingMaxSize:
		return cli.Usagef("-S %d: invalid size (valid range is %d to %d)", c.size, rpingMinSize, rpingMaxSize)
	case c.count < 0:
		return cli.Usagef("-C %d: invalid count", c.count)
	case c.crc && c.provider != tcp.Name:
		return cli.Usagef("-crc needs the %s provider", tcp.Name)
	}
	var addr netip.Addr
	if c.addr != "" {
		var err error
		if addr, err = resolveAddr(ctx, c.addr); err != nil {
			return err
		}
	}
	wildcard := c.server && (!addr.IsValid() || addr.IsUnspecified())
	p, addrs, err := c.openProvider(wildcard, addr)
	if err != nil {
		return err
	}
	if !addr.IsValid() {
		addr = addrs[0]
	}
	target := netip.AddrPortFrom(addr, uint16(c.port))
	if c.server {
		return c.runServer(ctx, p, addrs, target, out)
	}
	return c.runClient(ctx, p, addrs, target, out)
}

// resolveAddr parses s as an IP address, or looks it up as a host name.
func resolveAddr(ctx context.Context, s string) (netip.Addr, error) {
	if a, err := netip.ParseAddr(s); err == nil {
		return a.Unmap(), nil
	}
	as, err := net.DefaultResolver.LookupNetIP(ctx, "ip", s)
	if err != nil || len(as) == 0 {
		return netip.Addr{}, cli.Usagef("-a %s: not an IP address or a known host name", s)
	}
	for _, a := range as {
		if a.Unmap().Is4() {
			return a.Unmap(), nil // rping's default family is IPv4
		}
	}
	return as[0].Unmap(), nil
}

// session.OpenProvider returns the provider and the addresses it serves. With -crc,
// or for a server on every address (wildcard, or -a 0.0.0.0 / ::), the tcp
// provider is one of its own, configured for it; otherwise it is the
// registered one.
func (c *rpingConfig) openProvider(wildcard bool, addr netip.Addr) (nd.Provider, []netip.Addr, error) {
	if c.provider != tcp.Name || (!c.crc && !wildcard) {
		return session.OpenProvider(c.provider)
	}
	cfg := tcp.DefaultConfig()
	cfg.CRC = c.crc
	if wildcard {
		all := netip.IPv4Unspecified()
		if addr.Is6() {
			all = netip.IPv6Unspecified()
		}
		cfg.Addresses = []netip.Addr{all}
	}
	p := tcp.New(cfg)
	addrs, err := p.Addresses()
	if err != nil {
		return nil, nil, fmt.Errorf("provider %s: QueryAddressList: %w", p.Name(), err)
	}
	if len(addrs) == 0 {
		return nil, nil, fmt.Errorf("provider %s serves no address", p.Name())
	}
	return p, addrs, nil
}

// rpingLimits are the endpoint limits of both sides: rping's queue depths,
// one SGE, and one Read each way (the client's IRD lets the server read from
// it; rping's conn_param asks for 1 and 1 too).
var rpingLimits = nd.EndpointLimits{
	InboundEntries: rpingRecvDepth, OutboundEntries: rpingSendDepth,
	InboundSGE: 1, OutboundSGE: 1,
	InboundReadLimit: 1, OutboundReadLimit: 1,
}

// rpingInfo is struct rping_rdma_info.
type rpingInfo struct {
	buf  uint64
	rkey uint32
	size uint32
}

// put writes the 16-byte big-endian form of i into b.
func (i rpingInfo) put(b []byte) {
	binary.BigEndian.PutUint64(b[0:8], i.buf)
	binary.BigEndian.PutUint32(b[8:12], i.rkey)
	binary.BigEndian.PutUint32(b[12:16], i.size)
}

// parseRpingInfo reads a struct rping_rdma_info.
func parseRpingInfo(b []byte) rpingInfo {
	return rpingInfo{
		buf:  binary.BigEndian.Uint64(b[0:8]),
		rkey: binary.BigEndian.Uint32(b[8:12]),
		size: binary.BigEndian.Uint32(b[12:16]),
	}
}

// descriptor is the memory window descriptor the info names: buf and rkey
// are the window's Base and Token.
func (i rpingInfo) descriptor() nd.MWDescriptor {
	return nd.MWDescriptor{Base: i.buf, Length: uint64(i.size), Token: i.rkey}
}

// FillPing writes rping's data for ping number ping into buf, as
// rping_test_client does: "rdma-ping-%d: ", then letters from start to 'z'
// and again from 'A', and a terminating 0 in the last byte.
func FillPing(buf []byte, ping int, start byte) {
	prefix := fmt.Sprintf("rdma-ping-%d: ", int32(ping))
	n := copy(buf[:len(buf)-1], prefix)
	c := start
	for i := n; i < len(buf); i++ {
		buf[i] = c
		c++
		if c > rpingLastLetter {
			c = rpingFirstLetter
		}
	}
	buf[len(buf)-1] = 0
}

// StartLetter is the first pattern letter of ping number ping.
func StartLetter(ping int) byte {
	return byte(rpingFirstLetter + ping%(rpingLastLetter-rpingFirstLetter+1))
}

// rpingSide is what both roles hold for one connection: the session, one
// registration that holds every buffer, and the completion waiter.
type rpingSide struct {
	a    nd.Adapter
	s    *session.Session
	mr   nd.MemoryRegion
	wait *datapath.Waiter

	recvBuf []byte // the one Receive's buffer
	sendBuf []byte // the outgoing info or go-ahead
	rdmaBuf []byte // rping's rdma_buf
	start   []byte // the client's start_buf (nil on the server)

	recvSGL, sendSGL []nd.SGE
	recv, send, rdma nd.Result
}

// newRpingSide registers the buffers of a side with ping data size size;
// withStart adds the client's start buffer.
func newRpingSide(ctx context.Context, a nd.Adapter, size int, withStart bool) (*rpingSide, error) {
	n := 2*rpingInfoSize + size
	if withStart {
		n += size
	}
	mem := make([]byte, n)
	mr, err := a.RegisterMemory(ctx, mem)
	if err != nil {
		return nil, fmt.Errorf("RegisterMemory(%d bytes): %w", n, err)
	}
	r := &rpingSide{a: a, mr: mr}
	r.recvBuf = mem[0:rpingInfoSize:rpingInfoSize]
	r.sendBuf = mem[rpingInfoSize : 2*rpingInfoSize : 2*rpingInfoSize]
	r.rdmaBuf = mem[2*rpingInfoSize : 2*rpingInfoSize+size : 2*rpingInfoSize+size]
	if withStart {
		r.start = mem[2*rpingInfoSize+size:]
	}
	r.recvSGL = []nd.SGE{{Buffer: r.recvBuf, Region: mr}}
	r.sendSGL = []nd.SGE{{Buffer: r.sendBuf, Region: mr}}
	return r, nil
}

// postReceive posts the side's one Receive.
func (r *rpingSide) postReceive() error {
	if err := r.s.EP.Receive(&r.recv, r.recvSGL); err != nil {
		return fmt.Errorf("posting Receive: %w", err)
	}
	return nil
}

// sendInfo sends the 16-byte sendBuf (an info or a go-ahead) and waits for
// the Send to complete.
func (r *rpingSide) sendInfo(ctx context.Context, what string) error {
	if err := r.s.EP.Send(&r.send, r.sendSGL, 0); err != nil {
		return fmt.Errorf("sending %s: %w", what, err)
	}
	if err := r.wait.Wait(ctx, &r.send); err != nil {
		return err
	}
	if err := r.send.Status.Err(); err != nil {
		return fmt.Errorf("the Send of %s completed with %w", what, err)
	}
	return nil
}

// receiveInfo waits for the posted Receive, checks that it got a 16-byte
// message, reposts it (before anything else goes out, so that the peer's
// next Send finds it) and returns the message.
func (r *rpingSide) receiveInfo(ctx context.Context, what string) (rpingInfo, error) {
	if err := r.wait.Wait(ctx, &r.recv); err != nil {
		return rpingInfo{}, err
	}
	return r.received(what)
}

// received is receiveInfo once the Receive has completed.
func (r *rpingSide) received(what string) (rpingInfo, error) {
	if err := r.recv.Status.Err(); err != nil {
		return rpingInfo{}, fmt.Errorf("waiting for %s: Receive completed with %w", what, err)
	}
	if r.recv.BytesTransferred != rpingInfoSize {
		return rpingInfo{}, fmt.Errorf("received bogus data for %s: %d bytes, want %d", what, r.recv.BytesTransferred, rpingInfoSize)
	}
	info := parseRpingInfo(r.recvBuf)
	if err := r.postReceive(); err != nil {
		return rpingInfo{}, err
	}
	return info, nil
}

// bind binds a new memory window over buf with flags and waits for the
// binding to complete.
func (r *rpingSide) bind(ctx context.Context, buf []byte, flags nd.Flags) (nd.MWDescriptor, error) {
	mw, err := r.a.CreateMemoryWindow(nil)
	if err != nil {
		return nd.MWDescriptor{}, fmt.Errorf("CreateMemoryWindow: %w", err)
	}
	var res nd.Result
	d, err := r.s.EP.Bind(&res, r.mr, mw, buf, flags)
	if err != nil {
		return nd.MWDescriptor{}, fmt.Errorf("posting a Bind: %w", err)
	}
	if err := r.wait.Wait(ctx, &res); err != nil {
		return nd.MWDescriptor{}, err
	}
	if err := res.Status.Err(); err != nil {
		return nd.MWDescriptor{}, fmt.Errorf("a Bind completed with %w", err)
	}
	return d, nil
}

// session.RunClient connects to the rping server at target and pings it.
func (c *rpingConfig) runClient(ctx context.Context, p nd.Provider, addrs []netip.Addr, target netip.AddrPort, out io.Writer) error {
	a, err := session.OpenAdapter(p, addrs, session.RdmacmLocal(addrs, target.Addr()))
	if err != nil {
		return err
	}
	defer a.Close()
	r, err := newRpingSide(ctx, a, c.size, true)
	if err != nil {
		return err
	}
	if r.s, err = session.New(a, nil, rpingLimits); err != nil {
		return err
	}
	defer r.s.Close()
	r.wait = datapath.NewWaiter(r.s.CQ)
	if err := r.postReceive(); err != nil {
		return err
	}
	if err := r.s.Dial(ctx, target, nil, nil); err != nil {
		return err
	}
	if err := c.ping(ctx, r, out); err != nil {
		return err
	}
	if err := r.s.Conn.Disconnect(ctx); err != nil {
		return fmt.Errorf("disconnecting: %w", err)
	}
	return nil
}

// ping runs the client's pings on a connected side.
func (c *rpingConfig) ping(ctx context.Context, r *rpingSide, out io.Writer) error {
	startWin, err := r.bind(ctx, r.start, nd.FlagAllowRead)
	if err != nil {
		return err
	}
	rdmaWin, err := r.bind(ctx, r.rdmaBuf, nd.FlagAllowWrite)
	if err != nil {
		return err
	}
	startInfo := rpingInfo{buf: startWin.Base, rkey: startWin.Token, size: uint32(c.size)}
	rdmaInfo := rpingInfo{buf: rdmaWin.Base, rkey: rdmaWin.Token, size: uint32(c.size)}
	for ping := 0; c.count == 0 || ping < c.count; ping++ {
		FillPing(r.start, ping, StartLetter(ping))
		startInfo.put(r.sendBuf)
		if err := r.sendInfo(ctx, "the start buffer info"); err != nil {
			return fmt.Errorf("ping %d: %w", ping, err)
		}
		if _, err := r.receiveInfo(ctx, "the server's go-ahead after its RDMA Read"); err != nil {
			return fmt.Errorf("ping %d: %w", ping, err)
		}
		clear(r.rdmaBuf) // the server has not been told about it yet
		rdmaInfo.put(r.sendBuf)
		if err := r.sendInfo(ctx, "the rdma buffer info"); err != nil {
			return fmt.Errorf("ping %d: %w", ping, err)
		}
		if _, err := r.receiveInfo(ctx, "the server's go-ahead after its RDMA Write"); err != nil {
			return fmt.Errorf("ping %d: %w", ping, err)
		}
		if c.validate && !bytes.Equal(r.start, r.rdmaBuf) {
			return fmt.Errorf("ping %d: data mismatch: sent %q, got back %q", ping, cli.CString(r.start), cli.CString(r.rdmaBuf))
		}
		if c.verbose {
			fmt.Fprintf(out, "ping data: %s\n", cli.CString(r.rdmaBuf))
		}
	}
	return nil
}

// session.RunServer listens on target, serves one connection and returns.
func (c *rpingConfig) runServer(ctx context.Context, p nd.Provider, addrs []netip.Addr, target netip.AddrPort, out io.Writer) error {
	a, err := session.OpenAdapter(p, addrs, target.Addr())
	if err != nil {
		return err
	}
	defer a.Close()
	l, err := session.Listen(a, target.Port())
	if err != nil {
		return err
	}
	defer l.Close()
	if c.Listening != nil {
		c.Listening(netip.AddrPortFrom(target.Addr(), l.Port()))
	}
	req, err := session.NextRequest(ctx, a, l)
	if err != nil {
		return err
	}
	l.Close() // one connection, as rping without -P
	r, err := newRpingSide(ctx, a, c.size, false)
	if err != nil {
		return req.Reject(err)
	}
	if r.s, err = session.New(a, req.Conn, rpingLimits); err != nil {
		return req.Reject(err)
	}
	defer r.s.Close()
	r.wait = datapath.NewWaiter(r.s.CQ)
	if err := r.postReceive(); err != nil {
		return req.Reject(err)
	}
	if err := r.s.Accept(ctx, req, nil); err != nil {
		return err
	}
	return c.serve(ctx, r, out)
}

// serve answers the client's pings until it disconnects.
func (c *rpingConfig) serve(ctx context.Context, r *rpingSide, out io.Writer) error {
	var readSGL [1]nd.SGE
	var goAhead *nd.Result // the last go-ahead of a ping, if its Send has not been reaped
	for ping := 0; ; ping++ {
		// Wait for the client's start buffer info, or for its disconnect.
		if err := r.wait.Wait(ctx, &r.recv); err != nil {
			return err
		}
		if goAhead != nil {
			// The go-ahead of the last ping has completed by now, or
			// completes as the connection ends.
			if err := r.wait.Wait(ctx, goAhead); err != nil {
				return err
			}
			if st := goAhead.Status; st != nd.Success && st != nd.ErrCanceled {
				return fmt.Errorf("ping %d: Send of the go-ahead completed with %w", ping-1, st)
			}
			goAhead = nil
		}
		if r.recv.Status == nd.ErrCanceled {
			// The client disconnected between pings: the normal end.
			if c.count > 0 && ping != c.count {
				return fmt.Errorf("the client disconnected after %d pings, -C %d expected", ping, c.count)
			}
			return nil
		}
		if c.count > 0 && ping == c.count {
			return fmt.Errorf("the client started ping %d, more than -C %d", ping, c.count)
		}
		src, err := r.received("the client's start buffer info")
		if err != nil {
			return fmt.Errorf("ping %d: %w", ping, err)
		}
		if int(src.size) > len(r.rdmaBuf) || src.size == 0 {
			return fmt.Errorf("ping %d: the client advertised %d bytes; this server's -S is %d", ping, src.size, len(r.rdmaBuf))
		}
		data := r.rdmaBuf[:src.size]
		readSGL[0] = nd.SGE{Buffer: data, Region: r.mr}
		if err := r.s.EP.Read(&r.rdma, readSGL[:], src.descriptor(), 0, 0); err != nil {
			return fmt.Errorf("ping %d: RDMA Read: %w", ping, err)
		}
		if err := r.wait.Wait(ctx, &r.rdma); err != nil {
			return err
		}
		if err := r.rdma.Status.Err(); err != nil {
			return fmt.Errorf("ping %d: RDMA Read of %d bytes from %#x (rkey %#x) completed with %w", ping, src.size, src.buf, src.rkey, err)
		}
		if c.verbose {
			fmt.Fprintf(out, "server ping data: %s\n", cli.CString(data))
		}
		if c.validate {
			want := make([]byte, len(data))
			FillPing(want, ping, StartLetter(ping))
			if !bytes.Equal(data, want) {
				return fmt.Errorf("ping %d: data mismatch: read %q, rping sends %q", ping, cli.CString(data), cli.CString(want))
			}
		}

		clear(r.sendBuf) // rping's go-ahead is its never-filled send buffer
		if err := r.sendInfo(ctx, "the go-ahead after the RDMA Read"); err != nil {
			return fmt.Errorf("ping %d: %w", ping, err)
		}
		sink, err := r.receiveInfo(ctx, "the client's rdma buffer info")
		if err != nil {
			return fmt.Errorf("ping %d: %w", ping, err)
		}
		n := min(len(cli.CString(data))+1, len(data)) // rping writes strlen(rdma_buf) + 1
		if uint32(n) > sink.size {
			return fmt.Errorf("ping %d: the client's rdma buffer holds %d bytes, the echo needs %d", ping, sink.size, n)
		}
		readSGL[0] = nd.SGE{Buffer: data[:n], Region: r.mr}
		if err := r.s.EP.Write(&r.rdma, readSGL[:], sink.descriptor(), 0, 0); err != nil {
			return fmt.Errorf("ping %d: RDMA Write: %w", ping, err)
		}
		if err := r.wait.Wait(ctx, &r.rdma); err != nil {
			return err
		}
		if err := r.rdma.Status.Err(); err != nil {
			return fmt.Errorf("ping %d: RDMA Write of %d bytes to %#x (rkey %#x) completed with %w", ping, n, sink.buf, sink.rkey, err)
		}
		// The second go-ahead: its completion is reaped with the next
		// Receive, since a client that is done may disconnect before our
		// transport saw the Send confirmed.
		if err := r.s.EP.Send(&r.send, r.sendSGL, 0); err != nil {
			return fmt.Errorf("ping %d: sending the go-ahead after the RDMA Write: %w", ping, err)
		}
		goAhead = &r.send
	}
}
