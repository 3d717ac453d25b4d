// Package cli holds what nd's commands share at their command line: flag
// types for byte sizes and C integers (ByteSize, CInt, Atoi), the bytes of
// a C string in a fixed buffer (CString), and the usage errors a command
// returns (UsageError, Usagef) with the RunFunc that returns them.
//
// Its functions are safe for concurrent use.
package cli
