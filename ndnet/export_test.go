package ndnet

import "github.com/godirect/nd"

// SourceRegion returns c's registration of the caller's buffer it last
// wrote from, or nil.
func SourceRegion(c *Conn) nd.MemoryRegion {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.srcMR
}

// StagedBytes counts the non-zero bytes of c's staging ring; call it with
// no Write under way.
func StagedBytes(c *Conn) int {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	n := 0
	for _, b := range c.stage {
		if b != 0 {
			n++
		}
	}
	return n
}

// SourceWritesDone reports whether every RDMA Write c posted from a
// caller's buffer has completed, as far as c has seen.
func SourceWritesDone(c *Conn) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.sourceDoneLocked()
}
