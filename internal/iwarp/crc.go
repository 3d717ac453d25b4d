package iwarp

import "hash/crc32"

// castagnoli is the CRC-32C table; crc32 recognises it and uses the
// hardware instruction when the CPU has one. It is only read after init.
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// CRCSize is the size of the MPA CRC field that ends every FPDU.
const CRCSize = 4

// UpdateCRC returns the CRC-32C (Castagnoli, the MPA CRC) of the bytes
// already summed into crc followed by p. Start a new sum with crc 0; the
// running value can be fed back any number of times, so the CRC of a
// message scattered over several slices is the chain of UpdateCRC calls.
// It does not allocate and is safe for concurrent use.
func UpdateCRC(crc uint32, p []byte) uint32 {
	return crc32.Update(crc, castagnoli, p)
}

// ChecksumCRC returns the CRC-32C of p, i.e. UpdateCRC(0, p).
// It is safe for concurrent use.
func ChecksumCRC(p []byte) uint32 {
	return crc32.Update(0, castagnoli, p)
}

// zeroPad holds the pad bytes fed to the CRC.
var zeroPad [3]byte
