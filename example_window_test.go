package nd_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net/netip"
	"time"

	"github.com/godirect/nd"
	"github.com/godirect/nd/provider/loop"
)

// A memory window advertised and written: the server binds a window over
// its buffer and sends the descriptor; the client RDMA-writes through it and
// then Sends "done", which the server receives only after the Write's data
// is in place. A Write through a token the server never advertised fails
// with CauseRemoteAccess, and the server learns from DisconnectReason that
// it refused the client's Write. (In one process over provider loop; see
// provider/tcp's example for two processes.)
func Example_memoryWindow() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	p := loop.New()
	srvA, _ := p.OpenAdapter(netip.MustParseAddr("127.0.0.1"))
	cliA, _ := p.OpenAdapter(netip.MustParseAddr("127.0.0.2"))
	defer srvA.Close()
	defer cliA.Close()
	limits := nd.EndpointLimits{InboundEntries: 2, OutboundEntries: 4, InboundSGE: 1, OutboundSGE: 1}
	wait := func(cq nd.CompletionQueue) *nd.Result {
		var done [1]*nd.Result
		if _, err := nd.WaitResults(ctx, cq, done[:]); err != nil {
			log.Fatal(err)
		}
		return done[0]
	}

	// Connect a server endpoint and a client endpoint, each with a
	// Receive posted and a registered buffer.
	listener, _ := srvA.Listen(0, nd.ProtocolTCP, 0)
	srvConn, _ := srvA.CreateConnector()
	srvCQ, _ := srvA.CreateCompletionQueue(8)
	cliConn, _ := cliA.CreateConnector()
	cliCQ, _ := cliA.CreateCompletionQueue(8)
	cliEP, _ := cliConn.CreateEndpoint(cliCQ, cliCQ, limits)
	cliBuf := make([]byte, 64)
	cliMR, _ := cliA.RegisterMemory(ctx, cliBuf)
	var cliRecv nd.Result
	cliEP.Receive(&cliRecv, []nd.SGE{{Buffer: cliBuf[:nd.MWDescriptorSize], Region: cliMR}})
	connected := make(chan error, 1)
	go func() {
		err := cliConn.Connect(ctx, cliEP, netip.AddrPortFrom(srvA.Address(), listener.Port()), nd.ProtocolTCP, 0, nil)
		if err == nil {
			err = cliConn.CompleteConnect(ctx)
		}
		connected <- err
	}()
	if err := listener.GetConnectionRequest(ctx, srvConn); err != nil {
		log.Fatal(err)
	}
	srvEP, _ := srvConn.CreateEndpoint(srvCQ, srvCQ, limits)
	window := make([]byte, 32)
	control := make([]byte, 64)
	winMR, _ := srvA.RegisterMemory(ctx, window)
	ctlMR, _ := srvA.RegisterMemory(ctx, control)
	var srvRecv nd.Result
	srvEP.Receive(&srvRecv, []nd.SGE{{Buffer: control[32:], Region: ctlMR}})
	if err := srvConn.Accept(ctx, srvEP, nil); err != nil {
		log.Fatal(err)
	}
	if err := <-connected; err != nil {
		log.Fatal(err)
	}

	// Server: bind the window for writing and send its descriptor.
	mw, _ := srvA.CreateMemoryWindow(nil)
	var bind, send nd.Result
	desc, _ := srvEP.Bind(&bind, winMR, mw, window, nd.FlagAllowWrite|nd.FlagSilentSuccess)
	desc.Put(control[:nd.MWDescriptorSize])
	srvEP.Send(&send, []nd.SGE{{Buffer: control[:nd.MWDescriptorSize], Region: ctlMR}}, 0)
	wait(srvCQ)

	// Client: take the descriptor, write through it, say "done".
	wait(cliCQ)
	var remote nd.MWDescriptor
	remote.UnmarshalBinary(cliBuf[:nd.MWDescriptorSize])
	var write, done nd.Result
	n := copy(cliBuf[nd.MWDescriptorSize:], "written by the client")
	cliEP.Write(&write, []nd.SGE{{Buffer: cliBuf[nd.MWDescriptorSize : nd.MWDescriptorSize+n], Region: cliMR}}, remote, 4, 0)
	cliEP.Send(&done, []nd.SGE{{Buffer: []byte("done")}}, 0) // inline: no registration needed
	wait(cliCQ)
	wait(cliCQ)
	fmt.Println("client: Write", write.Status.Name(), write.BytesTransferred, "bytes")

	// Server: "done" arrived, so the Write's bytes are in the window.
	r := wait(srvCQ)
	fmt.Printf("server: %q, window holds %q\n", control[32:32+r.BytesTransferred], window[4:4+n])

	// Client: a Write through a token the server never advertised.
	forged := remote
	forged.Token ^= 0xffff
	var bad nd.Result
	cliEP.Write(&bad, []nd.SGE{{Buffer: cliBuf[:8], Region: cliMR}}, forged, 0, 0)
	wait(cliCQ)
	err := bad.Err()
	fmt.Println("client:", bad.Status.Name(), bad.Cause.String(), bad.BytesTransferred, "bytes; remote:", errors.Is(err, nd.CauseRemoteAccess))
	if err := srvConn.NotifyDisconnect(ctx); err != nil {
		log.Fatal(err)
	}
	reason := nd.DisconnectReason(srvConn)
	fmt.Println("server: refused the peer's Write:", errors.Is(reason, nd.CausePeerAccess))
	fmt.Println(reason)
	// Output:
	// client: Write ND_SUCCESS 21 bytes
	// server: "done", window holds "written by the client"
	// client: ND_ACCESS_VIOLATION CauseRemoteAccess 0 bytes; remote: true
	// server: refused the peer's Write: true
	// nd: the connection was ended by the peer's Write, which this side refused: ND_ACCESS_VIOLATION (0xc0000005): the request referenced memory that is not registered, out of range, or not permitted: peer access: this side refused the peer's Read or Write: its token, range or rights name nothing this side opened to that connection (no window or remote access has the token)
}
