// Package iwarp encodes and decodes the iWARP wire protocols spoken over a
// TCP stream: MPA connection setup frames (RFC 5044 with the RFC 6581
// enhanced IRD/ORD word), MPA FPDU framing with its CRC32c trailer
// (RFC 5044), DDP tagged and untagged segment headers (RFC 5041) and RDMAP
// messages (RFC 5040), byte for byte as Linux soft-iWARP (siw) puts them on
// the wire. docs/iwarp-wire.md in this repository describes the layouts.
//
// The package performs no I/O and keeps no global mutable state: every
// function is a pure transformation of its arguments (the CRC table is built
// once at package initialisation and only read afterwards), so all functions
// and methods are safe for concurrent use by multiple goroutines as long as
// the caller does not share the buffers or structs it passes in while they
// are being written.
//
// Conventions:
//
//   - Encoders are named Append... and append to a caller-supplied slice,
//     returning the extended slice; given enough spare capacity they never
//     allocate.
//   - Decoders are named Parse... and return structs by value. Slices inside
//     returned structs alias the input buffer; they are never copied.
//   - Decoders that can be fed a growing prefix of a byte stream return
//     ErrShortBuffer together with the total number of bytes they need.
//   - All errors are package-level sentinel values comparable with
//     errors.Is (or ==). Decoders never panic, whatever the input.
//   - Multi-byte fields are big-endian, except the MPA CRC, which travels
//     least-significant byte first.
//
// Sending an FPDU without copying the payload (for writev / net.Buffers):
//
//	hdr, _ := iwarp.AppendFPDUHeader(hbuf[:0], &h, len(payload))
//	crc := iwarp.UpdateCRC(iwarp.UpdateCRC(0, hdr), payload)
//	tr := iwarp.AppendFPDUTrailer(tbuf[:0], h.Len()+len(payload), crc, crcOn)
//	bufs := net.Buffers{hdr, payload, tr}
//
// Receiving one without an intermediate copy: read MinFPDUHeaderSize bytes,
// call ParseFPDUHeader (it asks for the 4 extra untagged-header bytes with
// ErrShortBuffer), read PayloadLen bytes straight into their destination,
// read TrailerLen bytes and call CheckFPDUTrailer with the running CRC.
package iwarp
