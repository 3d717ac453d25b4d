// Package verify is nd verify: Send/Receive, RDMA Write and RDMA Read
// traffic between two nd processes in which every byte and every
// completion is checked, for links that lose, delay, reorder, duplicate or
// cut packets (interop/netem_test.sh).
//
// # Protocol
//
// The client's Connect carries its plan in the private data: "ndvf", the
// largest message and the batch size (depth). The server registers memory
// for that connection, accepts, binds a window over depth slots of the
// largest message (slot i at offset i*max), fills it with the guard byte
// and sends a hello carrying the window's descriptor. From then on the
// client leads in lock-step, one request and the server's answer at a
// time, each a 48-byte control message (type, size, count, first
// sequence number, status):
//
//   - sends: a control message, then count Sends of size bytes; the
//     server checks each Receive's length and bytes and answers once the
//     last one is checked. It keeps depth+1 Receives of the largest size
//     posted, so a batch always finds them.
//   - writes: count RDMA Writes of size bytes into slots 0..count-1, then a
//     control message (which iWARP places after the Writes); the server
//     checks each slot's bytes and the guard byte after them, restores the
//     guard and answers.
//   - reads: a control message; the server fills slots 0..count-1 and
//     answers; the client then Reads the slots into sinks filled with the
//     guard byte and checks the bytes and the guard after them.
//   - done: the server answers and waits for the client's Disconnect.
//
// Message number q of size s carries pattern(q, s) (pattern.go), so a
// message that arrives twice, late, into another slot or cut short fails
// the check. An answer carries the server's status: a mismatch names the
// message and the first byte that differs.
//
// # Accounting
//
// Every request either side posts is in its ledger (ledger.go) from its
// post to its completion: a completion of a request that is not
// outstanding (a second one) is an error, and before the tool reports a
// connection it waits until each request posted on it completed exactly
// once, whatever ended it. A connection that ends without the other side's
// done (the network or the peer failed it) is reported with the time the
// tool learned it (the first failed completion or NotifyDisconnect's
// return), the first failure status and the status of every request it
// flushed; with -fail-ok that is an outcome, not an error. Afterwards the
// provider's goroutines and the process's sockets must be back to what
// they were before the connection (Linux; the goroutines elsewhere).
package verify
