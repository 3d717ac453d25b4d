package shm

// AllocateMemory is the package's AllocateMemory as a method of the
// provider, for code that holds only an nd.Provider (package ndnet finds it
// by interface and puts its receive rings there). It is safe for concurrent
// use.
func (p *Provider) AllocateMemory(size int) ([]byte, error) { return AllocateMemory(size) }

// FreeMemory is the package's FreeMemory as a method of the provider. It is
// safe for concurrent use.
func (p *Provider) FreeMemory(b []byte) error { return FreeMemory(b) }
