// Package tcp is the provider "tcp": ND connections between processes and
// hosts as iWARP over TCP (MPA, DDP and RDMAP: RFC 5044, 6581, 5041,
// 5040), the wire of the Linux kernel's soft-iWARP driver (siw), rdma-core's
// tools and iWARP NICs. Importing the package registers it; a program
// opens it by name, or makes one with its own Config:
//
//	import _ "github.com/godirect/nd/provider/tcp"
//
//	p, err := nd.OpenProvider("tcp")   // serves the host's IP addresses
//	p := tcp.New(cfg)                   // or with a Config of your own
//
// An adapter opens on one of the host's addresses (Provider.Addresses,
// or Config.Addresses). The ND port is the TCP port, as rdma_cm uses it
// over iWARP: a listener on port 5000 of 192.0.2.1 is reached at
// 192.0.2.1:5000, from godirect, from rping and perftest, or from siw. The
// protocol number of Listen and Connect only divides a port's requests
// among listeners (nd.ProtocolTCP when nothing else decides).
//
// What a program sees:
//
//   - Limits: Info, what Query reports; a Connect, Accept or Reject
//     carries at most MaxPrivateData (247) bytes of private data.
//   - Completion: a Send or Write completes Success once the peer
//     confirmed it placed the bytes (toward siw: once TCP took them).
//   - A refused access (a Write through a token the peer never
//     advertised, a range outside the window) completes
//     ND_ACCESS_VIOLATION with nd.CauseRemoteAccess, the peer is told
//     with an iWARP Terminate, and both sides' nd.DisconnectReason says
//     why the connection ended.
//   - Bounded waits: a peer that stops answering ends the connection with
//     ND_IO_TIMEOUT after Config.ResponseTimeout; a dead host or a
//     half-open connection ends after the TCP keepalive (Config.KeepAlive,
//     KeepAliveInterval, KeepAliveCount); a stalled handshake after
//     Config.ReplyTimeout or Config.HandshakeTimeout.
//   - Polling: GetResults on an empty queue moves the connections' bytes
//     itself; a program that waits (CompletionQueue.Notify,
//     nd.WaitResults) hands that to the provider's goroutine, which polls
//     for Config.Spin before it sleeps.
//   - Within the host, connections use reno congestion control
//     (Config.CongestionControl); Config.Logger, if set, receives
//     connection-level events, never the data path's.
//
// The example runs a server and a client in two processes.
// docs/tcp-transport.md describes the wire use, the provider's internals
// (who moves the bytes, in which goroutine, the lock order) and the
// measurements behind the tuning constants (tuning.go).
package tcp

// For the reader of the code, docs/tcp-transport.md ("Inside the
// provider") in short: a Provider's links share one readiness set
// (progress.go), moved by the application's polls or by the progress
// goroutine; a link's bytes are parsed under its rxMu (rx.go) and sent
// from the posting goroutine or the link's writer (tx.go). Lock order:
// progress.mu, then a link's rxMu, then txMu (TryLock under rxMu), then
// the link's mu; txMu before progress.heldMu.
