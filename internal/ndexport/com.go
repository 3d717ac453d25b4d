package ndexport

import (
	"net/netip"

	"github.com/godirect/nd"
	"github.com/godirect/nd/internal/ndabi"
	"github.com/godirect/nd/provider/shm"
	"github.com/godirect/nd/provider/tcp"
)

// The class ids of the DLL's providers: the ProviderId of their Winsock
// catalog entries, which DllGetClassObject receives.
var (
	// TCPClassID is the tcp transport's (iWARP over TCP).
	TCPClassID = ndabi.MustParseGUID("{E3E889F7-B1D8-47BE-A5C7-59E5A4D86084}")
	// SHMClassID is the shm transport's (shared memory between the
	// processes of one host).
	SHMClassID = ndabi.MustParseGUID("{32B0E7B8-F7E4-4B8F-876B-2112AFEC654B}")
)

// DefaultTransports are the DLL's providers: tcp, with the tcp provider's
// default configuration, and shm, serving the same addresses as tcp (an
// ND consumer picks a provider by address; which of the two serves an
// address both do is the catalog's order).
func DefaultTransports() []*Transport {
	t := tcp.New(tcp.DefaultConfig())
	cfg := shm.DefaultConfig()
	if addrs, err := t.Addresses(); err == nil && len(addrs) > 0 {
		cfg.Addresses = append(cfg.Addresses[:0:0], addrs...)
		for _, a := range shm.DefaultAddresses {
			if !contains(cfg.Addresses, a) {
				cfg.Addresses = append(cfg.Addresses, a)
			}
		}
	}
	return []*Transport{
		{Name: tcp.Name, ClassID: TCPClassID, Provider: t},
		{Name: shm.Name, ClassID: SHMClassID, Provider: shm.New(cfg)},
	}
}

func contains(addrs []netip.Addr, a netip.Addr) bool {
	for _, x := range addrs {
		if x == a {
			return true
		}
	}
	return false
}

// ClassFactory is the IClassFactory through which ND v1 consumers get a
// transport's INDProvider.
type ClassFactory struct {
	Base
	t *Transport
}

func (f *ClassFactory) released() {}
func (f *ClassFactory) finalize() {}

// CreateInstance is IClassFactory::CreateInstance: an outer object is
// CLASS_E_NOAGGREGATION; INDProvider (or IUnknown) gives the transport's
// INDProvider, any other interface E_NOINTERFACE.
func (f *ClassFactory) CreateInstance(outer bool, iid ndabi.GUID) (*Provider1, nd.Status) {
	switch {
	case outer:
		return nil, nd.Status(ndabi.CLASS_E_NOAGGREGATION)
	case iid != ndabi.IIDINDProvider && iid != ndabi.IIDUnknown:
		return nil, nd.Status(ndabi.E_NOINTERFACE)
	}
	return NewProvider1(f.t), nd.Success
}

// LockServer is IClassFactory::LockServer: a lock keeps DllCanUnloadNow
// saying S_FALSE.
func (f *ClassFactory) LockServer(lock bool) nd.Status {
	if lock {
		AddLive(1)
	} else if Live() > 0 {
		AddLive(-1)
	}
	return nd.Success
}

// GetClassObject is DllGetClassObject's choice: for the transport of
// clsid (CLASS_E_CLASSNOTAVAILABLE for another), its IClassFactory (ND v1;
// also for IUnknown) or its IND2Provider (ND v2); E_NOINTERFACE for any
// other interface.
func GetClassObject(transports []*Transport, clsid, iid ndabi.GUID) (Object, nd.Status) {
	for _, t := range transports {
		if t.ClassID != clsid {
			continue
		}
		switch iid {
		case ndabi.IIDClassFactory, ndabi.IIDUnknown:
			f := &ClassFactory{t: t}
			f.init(f)
			return f, nd.Success
		case ndabi.IIDIND2Provider:
			return NewProvider2(t), nd.Success
		}
		return nil, nd.Status(ndabi.E_NOINTERFACE)
	}
	return nil, nd.Status(ndabi.CLASS_E_CLASSNOTAVAILABLE)
}

// CanUnloadNow is DllCanUnloadNow's answer: S_OK when no object is alive
// and no server lock is held, S_FALSE otherwise.
func CanUnloadNow() nd.Status {
	if Live() == 0 {
		return nd.Status(ndabi.S_OK)
	}
	return nd.Status(ndabi.S_FALSE)
}
