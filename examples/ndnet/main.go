package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/godirect/nd"
	_ "github.com/godirect/nd/provider/loop"
	_ "github.com/godirect/nd/provider/shm"
	_ "github.com/godirect/nd/provider/tcp"
)

func main() {
	provider := flag.String("provider", "shm", "the ND `provider` (shm or tcp)")
	server := flag.Bool("serve", false, "serve, and print the addresses")
	grpcAddr := flag.String("grpc", "", "the gRPC server's `address`")
	httpAddr := flag.String("http", "", "the HTTP server's `address`")
	flag.Parse()
	p, err := nd.OpenProvider(*provider)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if *server {
		s, err := serve(p)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		fmt.Printf("grpc=%s http=%s tcpgrpc=%s\n", s.grpc.Addr(), s.http.Addr(), s.tcpGRPC.Addr())
		io.Copy(io.Discard, os.Stdin) // serve until standard input closes
		return
	}
	if err := call(p, *grpcAddr, *httpAddr); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// call makes one HTTP request, one unary gRPC call and one streaming one,
// and prints what came back.
func call(p nd.Provider, grpcAddr, httpAddr string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := httpClient(p).Get("http://" + httpAddr + "/hello?name=ndnet")
	if err != nil {
		return err
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return err
	}
	fmt.Printf("http: %s\n", body)
	cc, err := grpcClient(p, grpcAddr)
	if err != nil {
		return err
	}
	defer cc.Close()
	got, err := unary(ctx, cc, []byte("ping"))
	if err != nil {
		return err
	}
	fmt.Printf("grpc unary: %s\n", got)
	msgs := [][]byte{[]byte("one"), []byte("two"), bytes.Repeat([]byte("3"), 1<<20)}
	answers, err := streamEcho(ctx, cc, msgs)
	if err != nil {
		return err
	}
	fmt.Printf("grpc stream: %d answers, last %d bytes\n", len(answers), len(answers[len(answers)-1]))
	return nil
}
