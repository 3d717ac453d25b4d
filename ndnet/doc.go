// Package ndnet carries byte streams over Network Direct connections: a
// net.Conn (Conn) and a net.Listener (Listener) over any nd.Provider, so
// that code written for net.Conn (net/http, gRPC, database drivers) uses
// shared memory between processes (provider shm), iWARP over TCP (provider
// tcp) or an RDMA device (provider verbs) by changing one Dial and one
// Listen.
//
//	l, _ := ndnet.Listen(shmProvider, "127.0.0.1:0")
//	c, _ := ndnet.Dial(ctx, shmProvider, l.Addr().String())
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
