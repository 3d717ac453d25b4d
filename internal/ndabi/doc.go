// Package ndabi describes Network Direct's binary interface (ndspi.h,
// nddef.h, ndstatus.h) once, for both directions in which godirect meets it:
// the provider DLL (cmd/ndprovider), which exports godirect's providers as
// ND v1 and v2 COM objects, and provider/ndspi, which calls the COM objects
// of any installed ND provider. It holds the interface identifiers, the
// order of every interface's methods in its table (the slot a call goes
// through), the layout of every structure that crosses the interface, the
// COM result codes ND uses beside its statuses (package nd's Status), and
// the conversions between sockaddr structures and netip values.
//
// ndabi.h declares the same interface in C for the DLL's C side and for C
// consumers; the package's tests compile it with a C compiler for Windows
// and check every structure offset, vtable slot and GUID against the Go
// declarations here.
//
// The layouts are those of 64-bit Windows (LLP64: ULONG is 4 bytes, SIZE_T
// and pointers 8), the only ones godirect's DLL and provider/ndspi serve.
// Nothing here calls anything; the package is pure data and conversions and
// builds on every platform.
package ndabi
