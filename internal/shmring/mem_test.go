package shmring

import "unsafe"

// u64bytes views w as bytes (tests only): an 8-byte aligned byte slice on
// the Go heap.
func u64bytes(w []uint64) []byte {
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(w))), len(w)*8)
}
