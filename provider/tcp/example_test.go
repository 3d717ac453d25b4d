package tcp_test

import (
	"bufio"
	"context"
	"fmt"
	"log"
	"net/netip"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/godirect/nd"
	_ "github.com/godirect/nd/provider/tcp" // registers the provider "tcp"
)

// roleEnv makes this program the server process of Example.
const roleEnv = "ND_TCP_EXAMPLE_ROLE"

// windowSize is the memory the server exposes to the client's RDMA Write.
const windowSize = 1 << 20

// limits are both endpoints' queue depths, entries per request and Reads
// in flight (none here).
var limits = nd.EndpointLimits{InboundEntries: 4, OutboundEntries: 4, InboundSGE: 1, OutboundSGE: 1}

// A program that runs in two processes: the same binary started with
// ND_TCP_EXAMPLE_ROLE=server serves, and exits.
func init() {
	if os.Getenv(roleEnv) == "server" {
		if err := server(); err != nil {
			log.Fatal("server: ", err)
		}
		os.Exit(0)
	}
}

// waitOne waits for the next completion on cq and returns it, or the
// error that ended the wait.
func waitOne(ctx context.Context, cq nd.CompletionQueue) (*nd.Result, error) {
	var done [1]*nd.Result
	if _, err := nd.WaitResults(ctx, cq, done[:]); err != nil {
		return nil, err
	}
	return done[0], done[0].Err()
}

// server accepts one connection, exposes 1 MiB through a memory window
// whose descriptor it sends to the client, waits for the client's "done"
// and checks every byte the client wrote.
func server() error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	p, err := nd.OpenProvider("tcp")
	if err != nil {
		return err
	}
	a, err := p.OpenAdapter(netip.MustParseAddr("127.0.0.1"))
	if err != nil {
		return err
	}
	defer a.Close()
	l, err := a.Listen(0, nd.ProtocolTCP, 0) // port 0: one is assigned
	if err != nil {
		return err
	}
	fmt.Println(l.Port()) // the client reads it from this process's output
	conn, err := a.CreateConnector()
	if err != nil {
		return err
	}
	if err := l.GetConnectionRequest(ctx, conn); err != nil {
		return err
	}
	hello := make([]byte, 64)
	cd, err := conn.GetConnectionData(hello)
	if err != nil {
		return err
	}
	cq, err := a.CreateCompletionQueue(8)
	if err != nil {
		return err
	}
	ep, err := conn.CreateEndpoint(cq, cq, limits)
	if err != nil {
		return err
	}
	window := make([]byte, windowSize)
	control := make([]byte, 64) // the descriptor out, "done" in
	winMR, err := a.RegisterMemory(ctx, window)
	if err != nil {
		return err
	}
	ctlMR, err := a.RegisterMemory(ctx, control)
	if err != nil {
		return err
	}
	// The Receive for "done" is posted before the connection exists: a
	// Send that finds none ends the connection.
	var recv, bind, send nd.Result
	if err := ep.Receive(&recv, []nd.SGE{{Buffer: control[32:], Region: ctlMR}}); err != nil {
		return err
	}
	if err := conn.Accept(ctx, ep, []byte("welcome")); err != nil {
		return err
	}
	mw, err := a.CreateMemoryWindow(nil)
	if err != nil {
		return err
	}
	desc, err := ep.Bind(&bind, winMR, mw, window, nd.FlagAllowWrite)
	if err != nil {
		return err
	}
	desc.Put(control[:nd.MWDescriptorSize])
	if err := ep.Send(&send, []nd.SGE{{Buffer: control[:nd.MWDescriptorSize], Region: ctlMR}}, 0); err != nil {
		return err
	}
	// Bind and Send complete in post order; the Receive whenever "done"
	// arrives, after the data of the client's Write.
	for range 3 {
		if _, err := waitOne(ctx, cq); err != nil {
			return err
		}
	}
	if got := string(control[32 : 32+recv.BytesTransferred]); got != "done" {
		return fmt.Errorf("received %q", got)
	}
	for i, b := range window {
		if b != byte(i%251) {
			return fmt.Errorf("byte %d of the window is %d", i, b)
		}
	}
	fmt.Printf("server: %q from the client, %d bytes written into the window, every one right\n", hello[:cd.PrivateDataLength], len(window))
	if err := conn.NotifyDisconnect(ctx); err != nil {
		return err
	}
	fmt.Println("server:", nd.DisconnectReason(conn))
	return nil
}

// Two processes over TCP: the server registers 1 MiB and advertises it
// through a memory window; the client connects with private data, writes
// the whole window with one RDMA Write, Sends "done" (which the server
// sees only after the Write's data), and disconnects. The server checks
// every byte. The client is this function; the server is this program
// again, started with ND_TCP_EXAMPLE_ROLE=server.
func Example() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	srv := exec.Command(os.Args[0])
	srv.Env = append(os.Environ(), roleEnv+"=server")
	srv.Stderr = os.Stderr
	out, err := srv.StdoutPipe()
	if err != nil {
		log.Fatal(err)
	}
	if err := srv.Start(); err != nil {
		log.Fatal(err)
	}
	lines := bufio.NewScanner(out)
	var port uint16
	if !lines.Scan() {
		log.Fatal("the server printed no port")
	}
	fmt.Sscan(lines.Text(), &port)

	p, err := nd.OpenProvider("tcp")
	if err != nil {
		log.Fatal(err)
	}
	a, err := p.OpenAdapter(netip.MustParseAddr("127.0.0.1"))
	if err != nil {
		log.Fatal(err)
	}
	defer a.Close()
	cq, err := a.CreateCompletionQueue(8)
	if err != nil {
		log.Fatal(err)
	}
	conn, err := a.CreateConnector()
	if err != nil {
		log.Fatal(err)
	}
	ep, err := conn.CreateEndpoint(cq, cq, limits)
	if err != nil {
		log.Fatal(err)
	}
	data := make([]byte, windowSize)
	for i := range data {
		data[i] = byte(i % 251)
	}
	control := make([]byte, 64) // the descriptor in, "done" out
	dataMR, err := a.RegisterMemory(ctx, data)
	if err != nil {
		log.Fatal(err)
	}
	ctlMR, err := a.RegisterMemory(ctx, control)
	if err != nil {
		log.Fatal(err)
	}
	var recv, write, send nd.Result
	if err := ep.Receive(&recv, []nd.SGE{{Buffer: control[:nd.MWDescriptorSize], Region: ctlMR}}); err != nil {
		log.Fatal(err)
	}
	// Private data rides on the request: at most the adapter's
	// MaxCallerData (tcp.MaxPrivateData, 247 bytes).
	server := netip.AddrPortFrom(a.Address(), port)
	if err := conn.Connect(ctx, ep, server, nd.ProtocolTCP, 0, []byte("hello")); err != nil {
		log.Fatal(err)
	}
	welcome := make([]byte, 64)
	cd, err := conn.GetConnectionData(welcome)
	if err != nil {
		log.Fatal(err)
	}
	if err := conn.CompleteConnect(ctx); err != nil {
		log.Fatal(err)
	}
	fmt.Printf("client: connected, the server said %q\n", welcome[:cd.PrivateDataLength])

	if r, err := waitOne(ctx, cq); err != nil || r != &recv {
		log.Fatal("the descriptor's Receive: ", err)
	}
	var desc nd.MWDescriptor
	if err := desc.UnmarshalBinary(control[:nd.MWDescriptorSize]); err != nil {
		log.Fatal(err)
	}
	// No wait between the two: a Send posted after a Write reaches the
	// peer after the Write's data.
	if err := ep.Write(&write, []nd.SGE{{Buffer: data, Region: dataMR}}, desc, 0, 0); err != nil {
		log.Fatal(err)
	}
	n := copy(control[32:], "done")
	if err := ep.Send(&send, []nd.SGE{{Buffer: control[32 : 32+n], Region: ctlMR}}, 0); err != nil {
		log.Fatal(err)
	}
	for range 2 {
		if _, err := waitOne(ctx, cq); err != nil {
			log.Fatal(err)
		}
	}
	fmt.Println("client: Write of", write.BytesTransferred, "bytes:", write.Status.Name())
	if err := conn.Disconnect(ctx); err != nil {
		log.Fatal(err)
	}

	var said strings.Builder
	for lines.Scan() {
		said.WriteString(lines.Text() + "\n")
	}
	if err := srv.Wait(); err != nil {
		log.Fatal("server: ", err)
	}
	fmt.Print(said.String())
	// Output:
	// client: connected, the server said "welcome"
	// client: Write of 1048576 bytes: ND_SUCCESS
	// server: "hello" from the client, 1048576 bytes written into the window, every one right
	// server: nd: the connection was ended by the peer (its Disconnect or Close, or the end of its process)
}
