//go:build windows

package ndcatalog

import (
	"errors"
	"fmt"
	"unsafe"

	"golang.org/x/sys/windows"

	"github.com/godirect/nd/internal/ndabi"
)

var (
	ws2                   = windows.NewLazySystemDLL("ws2_32.dll")
	wscEnumProtocols      = ws2.NewProc("WSCEnumProtocols")
	wscGetProviderPath    = ws2.NewProc("WSCGetProviderPath")
	wscInstall64_32       = ws2.NewProc("WSCInstallProvider64_32")
	wscInstall            = ws2.NewProc("WSCInstallProvider")
	wscDeinstall          = ws2.NewProc("WSCDeinstallProvider")
	wscDeinstall32        = ws2.NewProc("WSCDeinstallProvider32")
	errNeedsAdministrator = errors.New("ndcatalog: changing the Winsock catalog needs an elevated (administrator) process")
)

const (
	socketError = -1
	wsaENOBUFS  = 10055
	wsaEACCES   = 10013
	maxPath     = 260
)

func wsaError(call string, errno int32) error {
	if errno == wsaEACCES || errno == int32(windows.ERROR_ACCESS_DENIED) {
		return fmt.Errorf("%s: %w", call, errNeedsAdministrator)
	}
	return fmt.Errorf("ndcatalog: %s: %w", call, windows.Errno(errno))
}

// Read returns the entries of the 64-bit Winsock catalog, in catalog
// order, each with its provider's DLL path.
func Read() ([]Entry, error) {
	if err := wscEnumProtocols.Find(); err != nil {
		return nil, err
	}
	var n uint32
	var errno int32
	for {
		var buf []windows.WSAProtocolInfo
		var p *windows.WSAProtocolInfo
		if n > 0 {
			buf = make([]windows.WSAProtocolInfo, (uintptr(n)+unsafe.Sizeof(windows.WSAProtocolInfo{})-1)/unsafe.Sizeof(windows.WSAProtocolInfo{}))
			p = &buf[0]
		}
		r, _, _ := wscEnumProtocols.Call(0, uintptr(unsafe.Pointer(p)), uintptr(unsafe.Pointer(&n)), uintptr(unsafe.Pointer(&errno)))
		if int32(r) == socketError {
			if errno == wsaENOBUFS {
				continue // n is the size it needs now
			}
			return nil, wsaError("WSCEnumProtocols", errno)
		}
		entries := make([]Entry, 0, int(r))
		for i := range int(r) {
			entries = append(entries, entryOf(&buf[i]))
		}
		return entries, nil
	}
}

func entryOf(w *windows.WSAProtocolInfo) Entry {
	e := Entry{
		ProviderID:        *(*ndabi.GUID)(unsafe.Pointer(&w.ProviderId)),
		ServiceFlags:      w.ServiceFlags1,
		ProviderFlags:     w.ProviderFlags,
		Version:           w.Version,
		AddressFamily:     w.AddressFamily,
		SocketType:        w.SocketType,
		Protocol:          w.Protocol,
		ProtocolMaxOffset: w.ProtocolMaxOffset,
		Name:              windows.UTF16ToString(w.ProtocolName[:]),
	}
	var path [maxPath + 1]uint16
	n := int32(len(path))
	var errno int32
	if r, _, _ := wscGetProviderPath.Call(uintptr(unsafe.Pointer(&w.ProviderId)), uintptr(unsafe.Pointer(&path[0])), uintptr(unsafe.Pointer(&n)), uintptr(unsafe.Pointer(&errno))); int32(r) == 0 {
		e.Path = windows.UTF16ToString(path[:])
	}
	return e
}

// Install writes entries, all of one provider (one ProviderId and DLL
// path), into the 64-bit and 32-bit Winsock catalogs
// (WSCInstallProvider64_32). A provider already there with the same
// entries is left as it is; one with others is replaced.
func Install(entries []Entry) error {
	if len(entries) == 0 {
		return nil
	}
	id, path := entries[0].ProviderID, entries[0].Path
	have, err := Read()
	if err != nil {
		return err
	}
	var mine []Entry
	for _, e := range have {
		if e.ProviderID == id {
			mine = append(mine, e)
		}
	}
	if same(mine, entries) {
		return nil
	}
	if len(mine) > 0 {
		if err := Uninstall(id); err != nil {
			return err
		}
	}
	infos := make([]windows.WSAProtocolInfo, len(entries))
	for i, e := range entries {
		w := &infos[i]
		w.ServiceFlags1, w.ProviderFlags = e.ServiceFlags, e.ProviderFlags
		w.ProviderId = *(*windows.GUID)(unsafe.Pointer(&e.ProviderID))
		w.ProtocolChain.ChainLen = 1 // BASE_PROTOCOL
		w.Version, w.AddressFamily = e.Version, e.AddressFamily
		w.MaxSockAddr, w.MinSockAddr = ndabi.SizeofSockaddrIn6, ndabi.SizeofSockaddrIn
		w.SocketType, w.Protocol, w.ProtocolMaxOffset = e.SocketType, e.Protocol, e.ProtocolMaxOffset
		name, _ := windows.UTF16FromString(e.Name)
		copy(w.ProtocolName[:len(w.ProtocolName)-1], name)
	}
	wpath, err := windows.UTF16PtrFromString(path)
	if err != nil {
		return err
	}
	install := wscInstall64_32
	if install.Find() != nil {
		install = wscInstall // the 64-bit catalog only (Wine has no WSCInstallProvider64_32)
		if err := install.Find(); err != nil {
			return err
		}
	}
	var errno int32
	r, _, _ := install.Call(uintptr(unsafe.Pointer(&infos[0].ProviderId)), uintptr(unsafe.Pointer(wpath)),
		uintptr(unsafe.Pointer(&infos[0])), uintptr(len(infos)), uintptr(unsafe.Pointer(&errno)))
	if int32(r) == socketError {
		return wsaError(install.Name, errno)
	}
	// A catalog that says yes and keeps nothing (Wine's) is an error too.
	if have, err = Read(); err != nil {
		return err
	}
	for _, e := range have {
		if e.ProviderID == id {
			return nil
		}
	}
	return fmt.Errorf("ndcatalog: %s returned success, but the catalog does not hold the entries (Wine's catalog keeps no registration)", install.Name)
}

// same reports whether the catalog's entries of a provider are the ones
// Install would write.
func same(have, want []Entry) bool {
	if len(have) != len(want) {
		return false
	}
	for i := range have {
		h, w := have[i], want[i]
		if h.Version != w.Version || h.AddressFamily != w.AddressFamily || h.ServiceFlags&w.ServiceFlags != w.ServiceFlags ||
			h.ProviderFlags != w.ProviderFlags || h.Path != w.Path {
			return false
		}
	}
	return true
}

// Uninstall removes the provider id's entries from the 64-bit and 32-bit
// catalogs; a provider that is not there is not an error.
func Uninstall(id ndabi.GUID) error {
	for _, proc := range []*windows.LazyProc{wscDeinstall, wscDeinstall32} {
		if proc.Find() != nil {
			continue
		}
		var errno int32
		r, _, _ := proc.Call(uintptr(unsafe.Pointer(&id)), uintptr(unsafe.Pointer(&errno)))
		if int32(r) == socketError && errno != int32(windows.WSAEINVAL) {
			return wsaError(proc.Name, errno)
		}
	}
	return nil
}
