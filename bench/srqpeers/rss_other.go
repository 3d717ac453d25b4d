//go:build !unix

package main

// maxRSSKiB returns -1: the peak resident memory is read only on Unix
// systems.
func maxRSSKiB() int64 { return -1 }
