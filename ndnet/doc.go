// Package ndnet carries byte streams over Network Direct connections: a
// net.Conn (Conn) and a net.Listener (Listener) over any nd.Provider, so
// that code written for net.Conn (net/http, gRPC, database drivers) uses
// shared memory between processes (provider shm), iWARP over TCP (provider
// tcp) or an RDMA device (provider verbs) by changing one Dial and one
// Listen:
//
//	import _ "github.com/godirect/nd/provider/shm" // registers "shm"
//
//	l, err := ndnet.ListenNetwork("nd/shm", "127.0.0.1:0")
//	c, err := ndnet.DialNetwork(ctx, "nd/shm", l.Addr().String())
//	s, err := l.AcceptND() // a *Conn: CloseWrite without a type assertion
//
// # Networks
//
// A network name is "nd/" followed by the name of a registered provider
// (nd.OpenProvider): "nd/tcp", "nd/shm", "nd/loop", "nd/verbs", which
// Addr.Network reports back. The provider's package must be imported, as
// a database/sql driver's is; the error for a name nothing registered says
// which import registers it. ListenNetwork and DialNetwork take the name;
// Listen and Dial take an nd.Provider instead, for a provider configured
// by the program (tcp.New(cfg)). Dialer.DialContext has net.Dialer's
// signature, for net/http's Transport.DialContext and gRPC's dialer
// options. Listener.Accept returns the *Conn as a net.Conn; AcceptND
// returns it as is.
//
// Conns speak their own protocol (Protocol, over ND connections of that
// protocol number): both ends are ndnet.
//
// Small writes travel inside frames sent into receive buffers the peer keeps
// posted, under credit-based flow control; large ones are RDMA-written into
// a ring the peer exposes through a memory window. Each byte is copied once
// on each side (over shm, a large Write's bytes go from the caller's buffer
// into the peer's ring with one copy), and Read and Write allocate nothing
// once warm.
// docs/ndnet-protocol.md describes the wire format and the rules.
//
// Who moves the bytes: Write copies into a registered send buffer or the
// staging ring and posts the Send or RDMA Write (over shm, chunks of 64 KiB
// and more are RDMA-written from the caller's buffer); Read copies out of the
// receive buffer or ring, the bytes already queued before it polls for
// more. Completions are processed under the connection's state lock by a
// Read or Write that polls while it waits, or by the connection's one
// progress goroutine, which sleeps in CompletionQueue.Notify. A blocked
// Read or Write polls before it sleeps for a window that adapts to how long
// the waits of its direction last, up to Config.Spin: a sleep and its
// wake-up cost more than the wait itself when the peer answers within
// microseconds. Lock order: Read's lock, Write's lock, the state lock.
package ndnet
