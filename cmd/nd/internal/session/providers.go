package session

// The providers nd can use, linked in for their registration with package nd
// (nd.OpenProvider finds them by name). Add a provider here, and only here,
// to make it available to every command.
import (
	_ "github.com/godirect/nd/provider/loop"  // "loop": in-process, adapters of this process only
	_ "github.com/godirect/nd/provider/ndspi" // "ndspi": the ND providers installed on Windows (GODIRECT_NDSPI_*)
	_ "github.com/godirect/nd/provider/shm"   // "shm": shared memory between processes of this host
	_ "github.com/godirect/nd/provider/tcp"   // "tcp": iWARP over TCP, the host's addresses
	_ "github.com/godirect/nd/provider/verbs" // "verbs": rdma-core devices (build with -tags verbs)
)

// defaultProvider is the provider the commands use without -provider: the
// one a newcomer wants first, real iWARP traffic over loopback TCP.
const defaultProvider = "tcp"
