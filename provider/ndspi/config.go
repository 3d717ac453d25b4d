package ndspi

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/godirect/nd/internal/ndabi"
	"github.com/godirect/nd/internal/ndcatalog"
)

// Config says which installed ND provider, or which DLL, a Provider uses.
// The zero Config discovers every ND provider of the Winsock catalog.
type Config struct {
	// DLL is the path of an ND provider's DLL to load directly, without
	// the catalog (environment strings such as %SystemRoot% are
	// expanded). Class must be set with it.
	DLL string
	// Class is a provider's class id: the ProviderId of its catalog
	// entries, which DllGetClassObject is asked for. With DLL it names
	// the class to instantiate; without DLL, discovery keeps only the
	// catalog's provider of that id. The zero GUID: any.
	Class ndabi.GUID
	// Version is the ND version to use: 2 or 1 to use only that one, 0 to
	// prefer ND v2 (the provider's IND2Provider where the DLL serves it
	// or, with discovery, where the catalog registers it, else its ND v1
	// INDProvider).
	Version int
	// Catalog, when not nil, is the Winsock catalog that discovery reads
	// instead of the system's (Wine's catalog keeps no registration, and
	// tests give discovery a catalog of their own).
	Catalog []ndcatalog.Entry
}

// The environment variables ConfigFromEnv reads; the nd tools configure
// provider ndspi with them.
const (
	// EnvDLL is Config.DLL: the path of an ND provider DLL.
	EnvDLL = "GODIRECT_NDSPI_DLL"
	// EnvClass is Config.Class, in registry form
	// ({xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx}).
	EnvClass = "GODIRECT_NDSPI_CLASS"
	// EnvVersion is Config.Version: 1 or 2 (unset or 0: prefer ND v2).
	EnvVersion = "GODIRECT_NDSPI_VERSION"
)

// errNoClass is ConfigFromEnv's answer to a DLL without a class id.
var errNoClass = errors.New(EnvDLL + " needs " + EnvClass + ": the class id DllGetClassObject is asked for")

// ConfigFromEnv returns the Config that the environment variables EnvDLL,
// EnvClass and EnvVersion describe, read through lookup (os.LookupEnv).
// Unset or empty variables leave the zero Config's discovery. It reports an
// error for a malformed class id or version, and for a DLL without a
// class id.
func ConfigFromEnv(lookup func(string) (string, bool)) (Config, error) {
	var cfg Config
	get := func(name string) string {
		v, _ := lookup(name)
		return strings.TrimSpace(v)
	}
	cfg.DLL = get(EnvDLL)
	if s := get(EnvClass); s != "" {
		g, err := ndabi.ParseGUID(s)
		if err != nil {
			return Config{}, fmt.Errorf("%s=%q: %w", EnvClass, s, err)
		}
		cfg.Class = g
	}
	if s := get(EnvVersion); s != "" {
		v, err := strconv.Atoi(s)
		if err != nil {
			return Config{}, fmt.Errorf("%s=%q: the ND version is 1 or 2", EnvVersion, s)
		}
		cfg.Version = v
	}
	if err := cfg.check(); err != nil {
		return Config{}, err
	}
	return cfg, nil
}

// check reports what is wrong with cfg, if anything.
func (cfg Config) check() error {
	switch {
	case cfg.Version != 0 && cfg.Version != 1 && cfg.Version != 2:
		return fmt.Errorf("ND version %d: the ND version is 1 or 2 (0: prefer 2)", cfg.Version)
	case cfg.DLL != "" && cfg.Class == (ndabi.GUID{}):
		return errNoClass
	}
	return nil
}

// ndVersion is the catalog's value (iVersion) of an ND version number.
func ndVersion(v int) int32 {
	if v == 2 {
		return ndabi.NDVersion2
	}
	return ndabi.NDVersion1
}

// versionNumber is the ND version number (1 or 2) of a catalog iVersion.
func versionNumber(iVersion int32) int {
	if iVersion == ndabi.NDVersion2 {
		return 2
	}
	return 1
}
