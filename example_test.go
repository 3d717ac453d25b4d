package nd_test

import (
	"context"
	"fmt"
	"net/netip"
	"time"

	"github.com/godirect/nd"
	"github.com/godirect/nd/provider/loop"
)

// Two endpoints connect; the active side sends a message, and the passive
// side RDMA-reads a buffer that the active side exposed through a memory
// window whose descriptor travelled in the message.
func Example() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	p := loop.New()
	server, _ := p.OpenAdapter(netip.MustParseAddr("127.0.0.1"))
	client, _ := p.OpenAdapter(netip.MustParseAddr("127.0.0.2"))
	defer server.Close()
	defer client.Close()
	limits := nd.EndpointLimits{InboundEntries: 4, OutboundEntries: 4, InboundSGE: 1, OutboundSGE: 1,
		InboundReadLimit: 1, OutboundReadLimit: 1}
	// wait takes the next completion of cq: polls, then blocks in Notify.
	wait := func(cq nd.CompletionQueue) *nd.Result {
		var done [1]*nd.Result
		if _, err := nd.WaitResults(ctx, cq, done[:]); err != nil {
			panic(err)
		}
		return done[0]
	}

	// Passive side: listen, and wait for a request in the background.
	listener, _ := server.Listen(0, nd.ProtocolTCP, 0)
	sConn, _ := server.CreateConnector()
	requested := make(chan error, 1)
	go func() { requested <- listener.GetConnectionRequest(ctx, sConn) }()

	// Active side: expose a buffer through a window, connect.
	cq, _ := client.CreateCompletionQueue(8)
	cConn, _ := client.CreateConnector()
	cEP, _ := cConn.CreateEndpoint(cq, cq, limits)
	secret := []byte("hello from the active side")
	msg := make([]byte, nd.MWDescriptorSize)
	cMR, _ := client.RegisterMemory(ctx, append(secret, msg...))
	buf := cMR.Bytes()
	window, _ := client.CreateMemoryWindow(nil)
	connected := make(chan error, 1)
	go func() {
		err := cConn.Connect(ctx, cEP, netip.AddrPortFrom(server.Address(), listener.Port()), nd.ProtocolTCP, 0, nil)
		if err == nil {
			err = cConn.CompleteConnect(ctx)
		}
		connected <- err
	}()

	// Passive side: accept with a Receive posted for the descriptor.
	if err := <-requested; err != nil {
		panic(err)
	}
	sCQ, _ := server.CreateCompletionQueue(8)
	sEP, _ := sConn.CreateEndpoint(sCQ, sCQ, limits)
	sBuf := make([]byte, 64)
	sMR, _ := server.RegisterMemory(ctx, sBuf)
	var recv nd.Result
	sEP.Receive(&recv, []nd.SGE{{Buffer: sBuf[:nd.MWDescriptorSize], Region: sMR}})
	if err := sConn.Accept(ctx, sEP, nil); err != nil {
		panic(err)
	}
	if err := <-connected; err != nil {
		panic(err)
	}

	// Active side: bind the window and send its descriptor.
	var bind, send nd.Result
	desc, _ := cEP.Bind(&bind, cMR, window, buf[:len(secret)], nd.FlagAllowRead|nd.FlagSilentSuccess)
	desc.Put(buf[len(secret):])
	cEP.Send(&send, []nd.SGE{{Buffer: buf[len(secret):], Region: cMR}}, 0)
	fmt.Println("send:", wait(cq).Status.Name())

	// Passive side: receive the descriptor and read the buffer.
	r := wait(sCQ)
	fmt.Println("receive:", r.Status.Name(), r.BytesTransferred, "bytes")
	var remote nd.MWDescriptor
	remote.UnmarshalBinary(sBuf[:nd.MWDescriptorSize])
	var read nd.Result
	sEP.Read(&read, []nd.SGE{{Buffer: sBuf[:remote.Length], Region: sMR}}, remote, 0, 0)
	r = wait(sCQ)
	fmt.Println("read:", r.Status.Name(), r.BytesTransferred, "bytes:", string(sBuf[:r.BytesTransferred]))
	// Output:
	// send: ND_SUCCESS
	// receive: ND_SUCCESS 20 bytes
	// read: ND_SUCCESS 26 bytes: hello from the active side
}
