//go:build windows && (amd64 || arm64)

package ndspi

import (
	"errors"
	"fmt"
	"net/netip"
	"os"
	"strings"
	"sync"
	"syscall"

	"golang.org/x/sys/windows"

	"github.com/godirect/nd"
	"github.com/godirect/nd/internal/ndabi"
	"github.com/godirect/nd/internal/ndcatalog"
)

// backend is one loaded ND provider: its DLL's INDProvider (ND v1) or
// IND2Provider (ND v2) and its completion port. Backends are loaded once
// per process for each DLL, class id and version, and never unloaded: an
// ND provider's objects need its DLL for their whole life, and ND's
// consumers may keep none of them past their release (DllCanUnloadNow is
// not asked). Its methods are safe for concurrent use.
type backend struct {
	id      ndabi.GUID
	name    string
	path    string
	version int // 1 or 2
	prov    com
	port    *port
}

var backends struct {
	sync.Mutex
	m map[string]*backend
}

// loadBackend returns the backend of c's DLL and class id in ND version v,
// loading it the first time.
func loadBackend(c candidate, v int) (*backend, error) {
	key := fmt.Sprintf("%s|%s|%d", strings.ToLower(c.Path), c.ID, v)
	backends.Lock()
	defer backends.Unlock()
	if b := backends.m[key]; b != nil {
		return b, nil
	}
	d, err := loadDLL(c.Path)
	if err != nil {
		return nil, err
	}
	prov, err := d.provider(c.ID, v)
	if err != nil {
		return nil, err
	}
	prt, err := newPort()
	if err != nil {
		prov.release()
		return nil, err
	}
	b := &backend{id: c.ID, name: c.Name, path: c.Path, version: v, prov: prov, port: prt}
	if backends.m == nil {
		backends.m = map[string]*backend{}
	}
	backends.m[key] = b
	return b, nil
}

// dll is a loaded provider DLL and its DllGetClassObject.
type dll struct {
	h              windows.Handle
	getClassObject uintptr
}

// errNoExport is the failure of a DLL without DllGetClassObject.
var errNoExport = errors.New("the DLL does not export DllGetClassObject: it is no ND provider")

// loadError is the failure to load a DLL, or to find its
// DllGetClassObject: no version of its provider can be had.
type loadError struct{ err error }

func (e *loadError) Error() string { return e.err.Error() }
func (e *loadError) Unwrap() error { return e.err }

// loadDLL loads the DLL at path (LoadLibraryExW, its own directory first
// for the DLLs it needs) and finds its DllGetClassObject. A DLL is loaded
// once; the loader counts the loads of one path.
func loadDLL(path string) (*dll, error) {
	h, err := windows.LoadLibraryEx(path, 0, windows.LOAD_WITH_ALTERED_SEARCH_PATH)
	if err != nil {
		return nil, &loadError{fmt.Errorf("LoadLibraryEx(%s): %w", path, err)}
	}
	f, err := windows.GetProcAddress(h, "DllGetClassObject")
	if err != nil {
		windows.FreeLibrary(h)
		return nil, &loadError{fmt.Errorf("%s: %w", path, errNoExport)}
	}
	return &dll{h: h, getClassObject: f}, nil
}

// provider instantiates the ND provider of class id in ND version v: ND
// v2's IND2Provider straight from DllGetClassObject, ND v1's INDProvider
// through the IClassFactory DllGetClassObject returns.
func (d *dll) provider(id ndabi.GUID, v int) (com, error) {
	s, err := newScratch()
	if err != nil {
		return 0, err
	}
	defer s.free()
	// The class id and interface ids are passed by address, from
	// scratch (the class id) and from ndabi's globals.
	*(*ndabi.GUID)(at(s.ptr(16))) = id
	clsid, out := s.ptr(16), s.ptr(0)
	if v == 2 {
		if st := d.call(clsid, guidArg(&ndabi.IIDIND2Provider), out); st != nd.Success {
			return 0, fmt.Errorf("DllGetClassObject(%s, IID_IND2Provider): %s", id, hresultText(st))
		}
		return com(s.word(0)), nil
	}
	if st := d.call(clsid, guidArg(&ndabi.IIDClassFactory), out); st != nd.Success {
		return 0, fmt.Errorf("DllGetClassObject(%s, IID_IClassFactory): %s", id, hresultText(st))
	}
	factory := com(s.word(0))
	defer factory.release()
	s.setWord(0, 0)
	if st := factory.call(ndabi.ClassFactoryCreateInstance, 0, guidArg(&ndabi.IIDINDProvider), out); st != nd.Success {
		return 0, fmt.Errorf("IClassFactory::CreateInstance(IID_INDProvider) of %s: %s", id, hresultText(st))
	}
	return com(s.word(0)), nil
}

// call calls DllGetClassObject.
func (d *dll) call(clsid, iid, out uintptr) nd.Status {
	r, _, _ := syscall.SyscallN(d.getClassObject, clsid, iid, out)
	return nd.Status(uint32(r))
}

// addresses is the provider's address list (QueryAddressList, with ND's
// size protocol: asked with no buffer first, and again while it grows).
func (b *backend) addresses() ([]netip.Addr, error) {
	size := 0
	for range 8 {
		m, err := allocC(max(size, 16))
		if err != nil {
			return nil, err
		}
		n, err := allocC(8)
		if err != nil {
			m.free()
			return nil, err
		}
		var st nd.Status
		list := uintptr(0)
		if size > 0 {
			list = m.addr
		}
		if b.version == 2 {
			n.setU32(0, uint32(size))
			st = b.prov.call(ndabi.IND2ProviderQueryAddressList, list, n.addr)
			size = int(n.u32(0))
		} else {
			n.setWord(0, uint64(size))
			st = b.prov.call(ndabi.INDProviderQueryAddressList, list, n.addr)
			size = int(n.word(0))
		}
		n.free()
		switch st {
		case nd.ErrBufferOverflow:
			m.free()
			continue
		case nd.Success:
		default:
			m.free()
			return nil, &nd.OpError{Op: "QueryAddressList", Status: st}
		}
		if size > m.n {
			m.free()
			return nil, &nd.OpError{Op: "QueryAddressList", Status: nd.ErrUnsuccessful}
		}
		addrs, ok := ndabi.ParseAddressList(m.bytes()[:size], m.addr)
		m.free()
		if !ok {
			return nil, &nd.OpError{Op: "QueryAddressList: a malformed SOCKET_ADDRESS_LIST", Status: nd.ErrUnsuccessful}
		}
		for i := range addrs {
			addrs[i] = addrs[i].Unmap()
		}
		return addrs, nil
	}
	return nil, &nd.OpError{Op: "QueryAddressList: the list kept growing", Status: nd.ErrUnsuccessful}
}

// system is the platform's side of a Provider: the backends it loaded and
// what it found, loaded at its first use.
type system struct {
	once     sync.Once
	backends []*backend
	found    []Installed
	err      error
}

// load finds and loads the providers p's Config names, once.
func (s *system) load(p *Provider) {
	s.once.Do(func() {
		entries := p.cfg.Catalog
		if entries == nil && p.cfg.DLL == "" {
			var err error
			if entries, err = ndcatalog.Read(); err != nil {
				s.err = &nd.OpError{Op: "ndspi: reading the Winsock catalog", Status: nd.ErrDeviceNotReady, Err: err}
				return
			}
		}
		for _, c := range candidates(p.cfg, entries, os.LookupEnv) {
			in := Installed{ID: c.ID, Name: c.Name, Path: c.Path}
			var errs []error
			for _, v := range c.Versions {
				b, err := loadBackend(c, v)
				if err != nil {
					errs = append(errs, err)
					var le *loadError
					if errors.As(err, &le) {
						break // no other version of it either
					}
					continue
				}
				in.Version = v
				s.backends = append(s.backends, b)
				break
			}
			if in.Version == 0 {
				in.Err = errors.Join(errs...)
			}
			s.found = append(s.found, in)
		}
	})
}

// noProvider is the error of a Provider that loaded no ND provider.
func (s *system) noProvider(op string) error {
	if s.err != nil {
		return s.err
	}
	msg := "ndspi " + op + ": no ND provider is installed (the Winsock catalog lists none)"
	var errs []error
	for _, in := range s.found {
		errs = append(errs, fmt.Errorf("%s (%s): %w", in.ID, in.Path, in.Err))
	}
	if len(s.found) > 0 {
		msg = "ndspi " + op + ": no ND provider could be loaded"
	}
	return &nd.OpError{Op: msg, Status: nd.ErrNotSupported, Err: errors.Join(errs...)}
}

func (s *system) addresses(p *Provider) ([]netip.Addr, error) {
	s.load(p)
	if len(s.backends) == 0 {
		return nil, s.noProvider("Addresses")
	}
	var all []netip.Addr
	var firstErr error
	for _, b := range s.backends {
		addrs, err := b.addresses()
		if err != nil {
			firstErr = cmpErr(firstErr, err)
			continue
		}
		for _, a := range addrs {
			if !containsAddr(all, a) {
				all = append(all, a)
			}
		}
	}
	if len(all) == 0 && firstErr != nil {
		return nil, firstErr
	}
	return all, nil
}

func (s *system) openAdapter(p *Provider, addr netip.Addr) (nd.Adapter, error) {
	s.load(p)
	if len(s.backends) == 0 {
		return nil, s.noProvider("OpenAdapter")
	}
	for _, b := range s.backends {
		addrs, err := b.addresses()
		if err != nil || !containsAddr(addrs, addr) {
			continue
		}
		return openAdapter(p, b, addr)
	}
	return nil, nd.ErrInvalidAddress
}

func (s *system) installed(p *Provider) ([]Installed, error) {
	s.load(p)
	if s.err != nil {
		return nil, s.err
	}
	out := make([]Installed, len(s.found))
	copy(out, s.found)
	for i := range out {
		if out[i].Err != nil {
			continue
		}
		for _, b := range s.backends {
			if b.id != out[i].ID || !strings.EqualFold(b.path, out[i].Path) {
				continue
			}
			out[i].Addresses, out[i].Err = b.addresses()
			if len(out[i].Addresses) > 0 {
				if a, err := openAdapter(p, b, out[i].Addresses[0]); err == nil {
					info, _ := a.Query()
					out[i].Limits = &info
					a.Close()
				}
			}
			break
		}
	}
	return out, nil
}

func cmpErr(first, err error) error {
	if first != nil {
		return first
	}
	return err
}

func containsAddr(addrs []netip.Addr, a netip.Addr) bool {
	for _, x := range addrs {
		if x == a {
			return true
		}
	}
	return false
}
