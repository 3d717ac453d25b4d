package ndspi

import (
	"github.com/godirect/nd/internal/ndabi"
	"github.com/godirect/nd/internal/ndcatalog"
)

// candidate is one ND provider to load: its class id, its DLL (environment
// strings expanded) and the ND versions to try, in order.
type candidate struct {
	ID       ndabi.GUID
	Name     string
	Path     string // expanded
	RawPath  string // as the catalog or the Config gave it
	Versions []int  // 2 and/or 1, preferred first
}

// candidates lists what cfg asks to load. With cfg.DLL: that DLL under
// cfg.Class. Otherwise the catalog's ND providers (ndcatalog.Providers: ND
// entries grouped by provider id, in catalog order), only cfg.Class's when
// it is set, each with the versions its entries register (ND v2 first),
// only cfg.Version when it is set (a provider that does not register it is
// left out). lookup reads environment variables for the paths'
// %NAME% strings (case-insensitive on Windows).
func candidates(cfg Config, entries []ndcatalog.Entry, lookup func(string) (string, bool)) []candidate {
	if cfg.DLL != "" {
		c := candidate{ID: cfg.Class, RawPath: cfg.DLL, Path: ndcatalog.ExpandPath(cfg.DLL, lookup)}
		switch cfg.Version {
		case 0:
			c.Versions = []int{2, 1}
		default:
			c.Versions = []int{cfg.Version}
		}
		return []candidate{c}
	}
	var cs []candidate
	for _, p := range ndcatalog.Providers(entries) {
		if cfg.Class != (ndabi.GUID{}) && p.ID != cfg.Class {
			continue
		}
		c := candidate{ID: p.ID, Name: p.Name, RawPath: p.Path, Path: ndcatalog.ExpandPath(p.Path, lookup)}
		for _, v := range p.Versions {
			if cfg.Version == 0 || ndVersion(cfg.Version) == v {
				c.Versions = append(c.Versions, versionNumber(v))
			}
		}
		if len(c.Versions) > 0 {
			cs = append(cs, c)
		}
	}
	return cs
}
