// Package shm is the provider "shm": ND connections between the processes
// of one host through shared memory, without a network socket. Importing
// the package registers it; a program opens it by name, or makes one with
// its own Config:
//
//	import _ "github.com/godirect/nd/provider/shm"
//
//	p, err := nd.OpenProvider("shm")   // serves DefaultAddresses
//	p := shm.New(cfg)                   // or with a Config of your own
//
// Its addresses are names only (DefaultAddresses, 127.0.0.1 and
// 127.0.0.2, or Config.Addresses): a Connect reaches the listener of any
// process of the host with the same Config.Namespace that listens on the
// address, protocol and port. It runs on Linux, Windows, macOS and
// FreeBSD.
//
// What a program sees:
//
//   - Limits: Info, what Query reports; a Connect, Accept or Reject
//     carries at most MaxPrivateData (504) bytes of private data.
//   - Sends and their Receives travel through rings in a segment the two
//     processes share; a large Send (Config.SendThreshold) is copied
//     straight from the sender's buffer into the Receive.
//   - An RDMA Read or Write is one copy, made by the initiator into or out
//     of the target's memory, where the system lets it read and write the
//     peer's memory (Linux's process_vm_readv and process_vm_writev,
//     Windows' ReadProcessMemory and WriteProcessMemory), and into memory
//     from AllocateMemory on every system; otherwise it goes through the
//     rings (Config.OneSided).
//   - A refused access completes ND_ACCESS_VIOLATION with
//     nd.CauseRemoteAccess, and both sides' nd.DisconnectReason says why
//     the connection ended.
//   - A peer process that dies ends its connections at once (its
//     requests complete ND_CANCELED); one that stops answering ends them
//     with ND_IO_TIMEOUT after Config.ResponseTimeout.
//   - Polling: GetResults on an empty queue moves the connections' data
//     itself; a program that waits (CompletionQueue.Notify,
//     nd.WaitResults) hands that to the provider's goroutine, which polls
//     for Config.Spin before it sleeps.
//
// The example runs a server and a client in two processes.
// docs/shm-transport.md describes the setup, the segment's layout and
// records, what differs on Windows, macOS and FreeBSD, the provider's
// internals (who moves the bytes, the lock order) and the measurements
// behind the tuning constants (tuning.go).
package shm

// For the reader of the code, docs/shm-transport.md ("Inside the
// provider") in short: a Provider's links share one readiness set
// (progress.go), moved by the application's polls or by the progress
// goroutine; a link's records are handled under its rxMu (rx.go) and
// written by the posting goroutine or, when the ring is full, the link's
// writer (tx.go); a watcher goroutine per link reads its setup socket.
// Lock order: progress.mu, then a link's rxMu, then the link's mu, then
// the engine's locks; link.sendMu, sockRx, segMu, sharedMu, pubTable.mu,
// progress.helperMu and progress.wakeMu are leaves.
