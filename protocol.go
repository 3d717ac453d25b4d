package nd

// Protocol numbers for Adapter.Listen and Connector.Connect.
//
// ND's protocol argument is an IP protocol number (0..MaxProtocol) that only
// divides an adapter's port space: a Connect reaches a listener only if both
// name the same protocol and port, and nothing else about the connection
// depends on it (it is not the transport: provider tcp carries every
// protocol over TCP, provider shm over shared memory). Both sides of a
// program pass the same number. Use ProtocolTCP unless the program must
// share a port with other ND software that chose another: packages of this
// module keep their own (ndnet.Protocol 78, mesh.DefaultProtocol 77,
// ndtest.Protocol 123), so that their listeners and a program's do not
// take each other's connection requests.
const (
	// ProtocolTCP is 6, the IP protocol number of TCP: what ND
	// applications conventionally pass for a reliable connection, and
	// what the nd command's tools listen and connect with. It is the one
	// to use when nothing else decides.
	ProtocolTCP = 6
	// ProtocolMSMPI is 123, the number MS-MPI listens and connects with.
	ProtocolMSMPI = 123
	// MaxProtocol is the largest protocol number. Listen and Connect
	// refuse a protocol outside 0..MaxProtocol with an *ArgError.
	MaxProtocol = 255
)
