package nd_test

import (
	"context"
	"fmt"
	"net/netip"
	"time"

	"github.com/godirect/nd"
	"github.com/godirect/nd/provider/loop"
)

// Three clients connect to a server whose endpoints share one pool of four
// Receives; each client sends one message, which lands in whichever Receive
// is oldest, and the message itself names its sender.
func ExampleCreateSharedReceiveQueue() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	p := loop.New()
	server, _ := p.OpenAdapter(netip.MustParseAddr("127.0.0.1"))
	client, _ := p.OpenAdapter(netip.MustParseAddr("127.0.0.2"))
	defer server.Close()
	defer client.Close()
	// The server's inbound limits are the shared queue's; the clients
	// only send.
	limits := nd.EndpointLimits{InboundEntries: 1, OutboundEntries: 4, OutboundSGE: 1}
	wait := func(cq nd.CompletionQueue) *nd.Result {
		var done [1]*nd.Result
		if _, err := nd.WaitResults(ctx, cq, done[:]); err != nil {
			panic(err)
		}
		return done[0]
	}

	sCQ, _ := server.CreateCompletionQueue(16)
	srq, err := nd.CreateSharedReceiveQueue(server, sCQ, nd.SharedReceiveQueueLimits{Entries: 4, SGE: 1, NotifyThreshold: 2})
	if err != nil {
		panic(err)
	}
	pool := make([]byte, 4*16)
	poolMR, _ := server.RegisterMemory(ctx, pool)
	recvs := make([]nd.Result, 4)
	for k := range recvs {
		srq.Receive(&recvs[k], []nd.SGE{{Buffer: pool[k*16 : (k+1)*16], Region: poolMR}})
	}

	listener, _ := server.Listen(0, nd.ProtocolTCP, 0)
	cCQ, _ := client.CreateCompletionQueue(16)
	msg := make([]byte, 16)
	msgMR, _ := client.RegisterMemory(ctx, msg)
	for i := range 3 {
		cConn, _ := client.CreateConnector()
		cEP, _ := cConn.CreateEndpoint(cCQ, cCQ, limits)
		connected := make(chan error, 1)
		go func() {
			err := cConn.Connect(ctx, cEP, netip.AddrPortFrom(server.Address(), listener.Port()), nd.ProtocolTCP, 0, nil)
			if err == nil {
				err = cConn.CompleteConnect(ctx)
			}
			connected <- err
		}()
		sConn, _ := server.CreateConnector()
		if err := listener.GetConnectionRequest(ctx, sConn); err != nil {
			panic(err)
		}
		sEP, _ := nd.CreateEndpointWithSRQ(sConn, sCQ, sCQ, srq, limits)
		if err := sConn.Accept(ctx, sEP, nil); err != nil {
			panic(err)
		}
		if err := <-connected; err != nil {
			panic(err)
		}
		n := copy(msg, fmt.Sprintf("from client %d", i))
		var send nd.Result
		cEP.Send(&send, []nd.SGE{{Buffer: msg[:n], Region: msgMR}}, 0)
		wait(cCQ)
		r := wait(sCQ)
		for k := range recvs {
			if r == &recvs[k] {
				fmt.Printf("Receive %d: %s\n", k, pool[k*16:k*16+r.BytesTransferred])
			}
		}
	}
	// One Receive is left, below the threshold of 2: Notify returns at once.
	fmt.Println("low-water mark:", srq.Notify(ctx))
	// Output:
	// Receive 0: from client 0
	// Receive 1: from client 1
	// Receive 2: from client 2
	// low-water mark: <nil>
}
