// Command ndnet-example serves gRPC and net/http over ndnet streams, and
// calls them: the same servers and clients as over TCP, with one listener
// and one dialer changed.
//
//	ndnet-example -serve -provider shm            # prints the addresses it serves
//	ndnet-example -provider shm -grpc ADDR -http ADDR
package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/godirect/nd"
	"github.com/godirect/nd/ndnet"
)

// The echo service, described by hand (no generated code): Unary answers
// its request; Stream answers every message of a bidirectional stream.
const (
	unaryMethod  = "/ndnet.example.Echo/Unary"
	streamMethod = "/ndnet.example.Echo/Stream"
)

var echoService = grpc.ServiceDesc{
	ServiceName: "ndnet.example.Echo",
	HandlerType: (*any)(nil),
	Methods:     []grpc.MethodDesc{{MethodName: "Unary", Handler: unaryHandler}},
	Streams: []grpc.StreamDesc{{
		StreamName: "Stream", Handler: streamHandler, ServerStreams: true, ClientStreams: true,
	}},
}

func unaryHandler(_ any, ctx context.Context, dec func(any) error, intercept grpc.UnaryServerInterceptor) (any, error) {
	in := new(wrapperspb.BytesValue)
	if err := dec(in); err != nil {
		return nil, err
	}
	echo := func(_ context.Context, req any) (any, error) { return req, nil }
	if intercept == nil {
		return echo(ctx, in)
	}
	return intercept(ctx, in, &grpc.UnaryServerInfo{FullMethod: unaryMethod}, echo)
}

func streamHandler(_ any, stream grpc.ServerStream) error {
	for {
		m := new(wrapperspb.BytesValue)
		if err := stream.RecvMsg(m); err == io.EOF {
			return nil
		} else if err != nil {
			return err
		}
		if err := stream.SendMsg(m); err != nil {
			return err
		}
	}
}

// servers are the listeners a serving process runs.
type servers struct {
	grpc, http, tcpGRPC net.Listener
}

// serve starts a gRPC server and an HTTP server on ndnet listeners of p,
// and a gRPC server on loopback TCP for comparison.
func serve(p nd.Provider) (*servers, error) {
	var s servers
	var err error
	if s.grpc, err = ndnet.Listen(p, "127.0.0.1:0"); err != nil {
		return nil, err
	}
	if s.http, err = ndnet.Listen(p, "127.0.0.1:0"); err != nil {
		return nil, err
	}
	if s.tcpGRPC, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
		return nil, err
	}
	for _, l := range []net.Listener{s.grpc, s.tcpGRPC} {
		g := grpc.NewServer()
		g.RegisterService(&echoService, nil)
		go g.Serve(l)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/hello", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "hello %s over %s", r.URL.Query().Get("name"), r.Context().Value(http.LocalAddrContextKey).(net.Addr).Network())
	})
	mux.HandleFunc("/echo", func(w http.ResponseWriter, r *http.Request) { io.Copy(w, r.Body) })
	go http.Serve(s.http, mux)
	return &s, nil
}

// dialer returns a dial function over p for gRPC and net/http.
func dialer(p nd.Provider) func(ctx context.Context, addr string) (net.Conn, error) {
	return func(ctx context.Context, addr string) (net.Conn, error) { return ndnet.Dial(ctx, p, addr) }
}

// grpcClient connects a gRPC client to addr over p (nil: plain TCP).
func grpcClient(p nd.Provider, addr string) (*grpc.ClientConn, error) {
	opts := []grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials())}
	if p != nil {
		opts = append(opts, grpc.WithContextDialer(dialer(p)))
	}
	return grpc.NewClient("passthrough:///"+addr, opts...)
}

// httpClient is a net/http client whose connections are ndnet streams over
// p.
func httpClient(p nd.Provider) *http.Client {
	d := dialer(p)
	return &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, addr string) (net.Conn, error) { return d(ctx, addr) },
	}}
}

// unary makes one Unary call.
func unary(ctx context.Context, cc *grpc.ClientConn, msg []byte) ([]byte, error) {
	out := new(wrapperspb.BytesValue)
	if err := cc.Invoke(ctx, unaryMethod, wrapperspb.Bytes(msg), out); err != nil {
		return nil, err
	}
	return out.Value, nil
}

// streamEcho sends msgs on one Stream call and returns the answers.
func streamEcho(ctx context.Context, cc *grpc.ClientConn, msgs [][]byte) ([][]byte, error) {
	st, err := cc.NewStream(ctx, &echoService.Streams[0], streamMethod)
	if err != nil {
		return nil, err
	}
	var got [][]byte
	for _, m := range msgs {
		if err := st.SendMsg(wrapperspb.Bytes(m)); err != nil {
			return nil, err
		}
		in := new(wrapperspb.BytesValue)
		if err := st.RecvMsg(in); err != nil {
			return nil, err
		}
		got = append(got, in.Value)
	}
	if err := st.CloseSend(); err != nil {
		return nil, err
	}
	if err := st.RecvMsg(new(wrapperspb.BytesValue)); err != io.EOF {
		return nil, fmt.Errorf("end of stream: %v", err)
	}
	return got, nil
}
