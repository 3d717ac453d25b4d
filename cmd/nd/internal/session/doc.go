// Package session holds what nd's tools share: the flags common to the
// data tests (DataFlags, ByteSize, CInt), opening a provider and an adapter,
// listening and connecting (Session), the data path's request and receive
// rings, registrations and windows, polling the last byte of a Write, the
// hello each test's client sends, the sweep of message sizes and its timing
// (Instant, CPUTime), the server in a child process (StartServerChild), and
// the usage errors the commands return (UsageError).
//
// Its functions are called from one command's goroutines; a value is not
// safe for concurrent use unless its doc comment says so.
package session
