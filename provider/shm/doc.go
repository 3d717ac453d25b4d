// Package shm is godirect's transport between OS processes on the same
// host: ND connections over shared memory.
//
// A listener is an abstract Unix domain socket whose name encodes the ND
// address, protocol and port; connecting passes the connection's shared
// segment (a sealed memfd) and its doorbells (eventfds) with SCM_RIGHTS, so
// nothing is left in the file system when a process dies. Frames and Send
// payloads travel through two single-producer / single-consumer rings in the
// segment (internal/shmring); a large Send (Config.SendThreshold) puts only
// a descriptor of its buffers in the ring and the receiver copies the
// payload into its Receive with process_vm_readv, where the kernel allows
// it. RDMA Reads and Writes move their payload with one copy made by the
// initiator alone, checked against a window table the target publishes in
// the segment: a plain copy() into the target's memory when it lies in a
// segment from AllocateMemory, process_vm_readv / process_vm_writev against
// ordinary memory where the kernel allows it, and through the rings (the
// target's engine deciding) otherwise. The Unix socket stays open for the
// connection's life: its hang-up is how a peer's death is noticed.
//
// On Windows the same link, rings, window table and readiness set run
// over internal/winipc: the listener is a named pipe, the segment a
// pagefile-backed section and the doorbells events, whose handles the
// receiver of a setup message takes from the sender's process with
// DuplicateHandle; one-sided copies and Sends by rendezvous use
// ReadProcessMemory / WriteProcessMemory on the peer's process handle
// when the probe succeeds; the readiness set's doorbells are each waited
// on by a goroutine (readyset_doorbells.go); the pipe's end is the hang-up.
// docs/shm-transport.md says what differs.
//
// On macOS and FreeBSD (files *_unix.go, which Linux compiles instead of
// *_linux.go with the build tag shmportable, to test them) the transport
// runs in ring mode: the listener is a stream Unix socket in a directory
// of the user's under /tmp, whose names are held with flock(2); setup
// messages are length-prefixed frames with their descriptors; the segment
// is an unlinked temporary file and the doorbells pipes, each waited on by
// a goroutine for the readiness set; there is no one-sided copy except
// into windows over AllocateMemory segments, which the peer maps.
//
// Files: what one platform does in its own way sits in *_linux.go,
// *_windows.go and *_unix.go; what Linux, macOS and FreeBSD share in
// *_posix.go (the segment's mapping and passing, AllocateMemory, the
// setup socket's accept loop and hand-over); what every platform shares in
// setup.go (doorbells as handles, the passive hand-over to the listener,
// the choice of a port); what Windows and the systems without epoll share
// in readyset_doorbells.go (a goroutine per doorbell) and futex_spin.go.
//
// # Data flow
//
//   - Post: the engine calls link.Transmit on the posting goroutine. A
//     request that fits is encoded into the outbound ring at once (under
//     the link's mu) and published; the peer's data doorbell is rung only
//     if the peer armed its ring (the ring's sleeping flag).
//   - Poll: every link of a provider, once its endpoint is attached, is in
//     the provider's readiness set (progress.go). A GetResults that finds
//     its queue empty, of any completion queue of the provider, calls
//     transport.Poll: with at most directPollLinks links it looks at each
//     ring; otherwise it visits the hot links (those busy lately) and,
//     every epollLooks ring looks or while doorbells keep ringing, asks the
//     epoll instance which armed links rang. A hot link found empty for a
//     while is armed: it sets its ring's sleeping flag and leaves the hot
//     list, so an idle link costs nothing per poll.
//   - Reader: there is none per link. The records are handled (rx.go) by
//     whoever polls the set: the application, or the provider's progress
//     goroutine, which takes over pollerGone after the last application
//     poll, and at once for as long as a Notify waits (Watch to Unwatch,
//     whatever other goroutines poll; the hand-off, internal/handoff,
//     shared with provider/tcp); it spins Config.Spin,
//     then arms every link and blocks in epoll_wait. A Notify therefore
//     parks one goroutine however many endpoints its queue has.
//   - Writer: a link's writer goroutine runs only while requests wait for
//     room in a full outbound ring (tx.go); it sleeps on the room doorbell.
//   - Watcher: one goroutine per link reads the Unix socket (setup
//     messages, AllocateMemory segments, hang-up). At hang-up it kicks the
//     link into the hot list; the set drains the ring and ends the
//     connection. An idle link thus costs one goroutine.
//   - Helpers: one pull helper per provider copies part of each large
//     Send by rendezvous (rx.go, pull) while the poller copies the rest.
//   - Timers: the watchdog (two looks, ResponseTimeout apart, that found
//     requests waiting and nothing arrived: ND_IO_TIMEOUT) and the progress goroutine's
//     hand-off timer (pollerGone).
//
// # Lock order
//
// progress.mu (the set's poller: one application poll by TryLock, or the
// progress goroutine) -> link.rxMu (the inbound ring and readerState; a
// direct poll takes it by TryLock without progress.mu) -> link.mu (the
// outbound ring, jobs, unacknowledged requests) -> engine locks (through
// the Endpoint calls). link.sendMu and link.sockRx (the Unix socket),
// link.segMu, link.sharedMu, pubTable.mu, progress.helperMu and
// progress.wakeMu are leaves. Engine calls into the link (Transmit, Close)
// come without engine locks and take link.mu only; shutdown never waits
// for rxMu or progress.mu: cleanup, on a goroutine of its own, takes the
// link out of the set, ends its consumption, and waits, holding no lock,
// for the endpoint's Transmit under way (engine.Endpoint.WaitTransmit)
// before it unmaps what a direct copy reads.
//
// The tuning constants are in tuning.go; docs/shm-transport.md describes
// the wire formats and the measurements behind the choices.
package shm
