// Package tcp is godirect's iWARP transport: ND traffic as MPA + DDP +
// RDMAP over TCP (RFC 5044, 6581, 5041, 5040), byte-compatible with the
// Linux kernel's soft-iWARP driver (siw), rdma-core's tools and iWARP NICs.
//
// The ND port is the TCP port, as rdma_cm uses it over iWARP. Every remote
// access is checked by the engine (token, range, rights, bound endpoint); a
// violation is answered with a Terminate message and the connection
// closes. Within the host, connections use reno congestion control
// (Config.CongestionControl). docs/tcp-transport.md describes the wire use
// and the measurements behind the tuning constants (tuning.go).
//
// # Who moves the bytes
//
// Setup. Connect dials and sends the MPA request on the caller's goroutine;
// a handshake goroutine per connection reads the reply (active) or the
// request (passive, one goroutine per accepted TCP connection, started by
// the port's accept loop) with blocking reads, then hands the link to its
// readers (startReading) and ends.
//
// Inbound. Each Provider has one readiness set (progress.go): the sockets of
// all its links in one epoll set on Linux. Whoever holds the set's mu asks
// it which links have bytes and moves them, without blocking: an
// application's GetResults that found its completion queue empty, or Notify
// before it waits (engine.Progress), or else the provider's progress
// goroutine, which takes over once no application has polled for pollerGone
// (a poll under way counts, however long it reads), or at once when an
// application waits in Notify (the hand-off, internal/handoff, shared with
// provider/shm); it polls for Config.Spin, then waits in epoll_wait. While a
// provider has one link, a poll reads it directly (pollDirect); while that
// link is inside an inbound Send, a poll whose read found nothing keeps
// the next polls off the socket for four times as long (receivePause), so
// that the kernel can queue and acknowledge the segments that follow
// without waiting for the socket's lock, and long payloads are read
// straight into place with what follows them (rxBuffer.place, one readv
// per FPDU; not under BBR, whose links read them into place already). A
// link's bytes are parsed and placed by whoever holds its rxMu (pollRx,
// rx.go): the FPDU in progress stays in the link's readerState between
// polls; an inbound Write holds its window (engine.Hold) until its
// payload is placed, a Read Response until its bytes are written, so that
// an Invalidate completes only after them.
// Where the kernel has no readiness set (perLink: not Linux), each link's
// reader goroutine reads blocking instead.
//
// Outbound. The engine's pump calls Transmit on the posting goroutine; a
// small batch is copied and written there with one non-blocking write
// (sendInline), which a poller also uses for small Read Responses; larger
// ones, and what the socket did not take, go to the link's writer
// goroutine (writeLoop), which gathers FPDUs into one writev. Sends and
// Writes to a godirect peer complete when a zero-length Read confirms them
// (confirm.go); a response to such a Read is held back briefly so that it
// leaves with the application's answer (deferTx).
//
// Timers. Per link: the response watchdog (ResponseTimeout), the
// ready-to-receive deadline of the passive handshake, the deferral limit
// and the silent-Send confirmation delay. Per provider: the progress
// goroutine's hand-off timer.
//
// # Lock order
//
// progress.mu (the readiness set's poller) before a link's rxMu before
// txMu (taken with TryLock under rxMu) before the link's mu; txMu before
// progress.heldMu. The engine is called with rxMu or txMu held, never with
// mu; the engine calls Transmit and Close without its own locks held.
//
// # Goroutines
//
// Per provider: the progress goroutine while it has links, and an accept
// loop per listening port. Per link: the writer once the connection is up;
// on perLink platforms also the reader. Per connection being set up: the
// handshake goroutine.
package tcp
