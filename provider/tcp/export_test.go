package tcp

// PartialInlineWrites returns how many inline sends so far the socket took
// only in part, leaving the rest to the writer.
func PartialInlineWrites() uint64 { return partialInlineWrites.Load() }
