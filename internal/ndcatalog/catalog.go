// Package ndcatalog reads and writes the Network Direct providers' entries
// of the Winsock catalog: the hidden protocol entries through which ND
// consumers (ND's helper library, MS-MPI, provider/ndspi) find a provider's
// DLL and class id, and which "nd provider install" writes for godirect's
// DLL. Reading the system's catalog and changing it are Windows's
// (catalog_windows.go); what makes an entry an ND provider's, how entries
// group into providers and how a DLL path's environment strings expand
// are the same everywhere, and are tested on catalogs given to them.
package ndcatalog

import (
	"errors"
	"slices"
	"strings"

	"github.com/godirect/nd/internal/ndabi"
)

// ErrNotSupported is what reading or changing the catalog returns where
// there is no Winsock catalog (any system but Windows).
var ErrNotSupported = errors.New("ndcatalog: the Winsock catalog is Windows's")

// Entry is one protocol entry of the Winsock catalog (WSAPROTOCOL_INFOW),
// as far as ND looks at it.
type Entry struct {
	ProviderID        ndabi.GUID
	ServiceFlags      uint32 // dwServiceFlags1
	ProviderFlags     uint32 // dwProviderFlags
	Version           int32  // iVersion: ND_VERSION_1 or ND_VERSION_2
	AddressFamily     int32
	SocketType        int32
	Protocol          int32
	ProtocolMaxOffset int32
	Name              string // szProtocol
	// Path is the provider's DLL (WSCGetProviderPath), environment
	// strings such as %SystemRoot% not yet expanded.
	Path string
}

// IsND reports whether e is an ND provider's entry, by the rules ND's
// helper library applies: the service flags of guaranteed delivery and
// order, messages and connect data; for ND v1, a hidden entry (v1
// providers do not always set PFL_NETWORKDIRECT_PROVIDER); for ND v2,
// hidden and PFL_NETWORKDIRECT_PROVIDER; IPv4 or IPv6; socket type -1,
// protocol 0, protocol offset 0.
func (e Entry) IsND() bool {
	if e.ServiceFlags&ndabi.NDServiceFlags != ndabi.NDServiceFlags {
		return false
	}
	switch e.Version {
	case ndabi.NDVersion1:
		if e.ProviderFlags&ndabi.PFLHidden == 0 {
			return false
		}
	case ndabi.NDVersion2:
		if e.ProviderFlags&ndabi.NDProviderFlags != ndabi.NDProviderFlags {
			return false
		}
	default:
		return false
	}
	return (e.AddressFamily == ndabi.AFInet || e.AddressFamily == ndabi.AFInet6) &&
		e.SocketType == -1 && e.Protocol == 0 && e.ProtocolMaxOffset == 0
}

// Provider is one ND provider of the catalog: the ND entries with one
// ProviderId.
type Provider struct {
	ID   ndabi.GUID
	Name string // the first entry's szProtocol
	Path string // the DLL, environment strings not yet expanded
	// Versions are the ND versions its entries name, ND v2 first.
	Versions []int32
}

// Version is the ND version to use the provider through: ND v2 when it
// has an ND v2 entry, else ND v1.
func (p Provider) Version() int32 { return p.Versions[0] }

// Providers keeps the ND entries of a catalog and groups them by
// ProviderId, in the order their first entries come (the order in which
// consumers search them for an address).
func Providers(entries []Entry) []Provider {
	var ps []Provider
	for _, e := range entries {
		if !e.IsND() {
			continue
		}
		i := slices.IndexFunc(ps, func(p Provider) bool { return p.ID == e.ProviderID })
		if i < 0 {
			ps = append(ps, Provider{ID: e.ProviderID, Name: e.Name, Path: e.Path})
			i = len(ps) - 1
		}
		if !slices.Contains(ps[i].Versions, e.Version) {
			ps[i].Versions = append(ps[i].Versions, e.Version)
		}
	}
	for i := range ps {
		slices.SortFunc(ps[i].Versions, func(a, b int32) int { return int(b - a) }) // v2 (0x20000) before v1
	}
	return ps
}

// ExpandPath expands the environment strings of a DLL path as Windows'
// ExpandEnvironmentStrings does: %NAME% becomes the variable's value
// (lookup, case-insensitive on Windows), %NAME% of an unset variable and a
// lone % stay as they are.
func ExpandPath(path string, lookup func(string) (string, bool)) string {
	var b strings.Builder
	for {
		i := strings.IndexByte(path, '%')
		if i < 0 {
			b.WriteString(path)
			return b.String()
		}
		j := strings.IndexByte(path[i+1:], '%')
		if j < 0 {
			b.WriteString(path)
			return b.String()
		}
		name := path[i+1 : i+1+j]
		b.WriteString(path[:i])
		if v, ok := lookup(name); ok && name != "" {
			b.WriteString(v)
			path = path[i+j+2:]
			continue
		}
		// Not a variable: keep the first % and look again from the second.
		b.WriteString(path[i : i+1+j])
		path = path[i+1+j:]
	}
}

// Entries are the catalog entries "nd provider install" writes for a
// provider of godirect's DLL: one ND v2 entry and one ND v1 entry (in that
// order: ND's helper library takes the first entry of a ProviderId), IPv4,
// with the flags IsND looks for.
func Entries(id ndabi.GUID, name, path string) []Entry {
	e := Entry{
		ProviderID:    id,
		ServiceFlags:  ndabi.NDServiceFlags,
		ProviderFlags: ndabi.NDProviderFlags,
		Version:       ndabi.NDVersion2,
		AddressFamily: ndabi.AFInet,
		SocketType:    -1,
		Name:          name,
		Path:          path,
	}
	v1 := e
	v1.Version = ndabi.NDVersion1
	return []Entry{e, v1}
}
