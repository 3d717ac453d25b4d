package ndspi

import (
	"strings"
	"testing"

	"github.com/godirect/nd/internal/ndabi"
)

func TestConfigFromEnv(t *testing.T) {
	class := "{E3E889F7-B1D8-47BE-A5C7-59E5A4D86084}"
	for _, c := range []struct {
		name string
		env  map[string]string
		want Config
		err  string
	}{
		{"nothing: discovery", nil, Config{}, ""},
		{"a DLL and its class", map[string]string{EnvDLL: `C:\nd\prov.dll`, EnvClass: class}, Config{DLL: `C:\nd\prov.dll`, Class: ndabi.MustParseGUID(class)}, ""},
		{"a class without braces, lower case", map[string]string{EnvDLL: "p.dll", EnvClass: strings.ToLower(class[1:37])}, Config{DLL: "p.dll", Class: ndabi.MustParseGUID(class)}, ""},
		{"a version", map[string]string{EnvVersion: " 1 "}, Config{Version: 1}, ""},
		{"a class alone filters discovery", map[string]string{EnvClass: class, EnvVersion: "2"}, Config{Class: ndabi.MustParseGUID(class), Version: 2}, ""},
		{"a DLL without a class", map[string]string{EnvDLL: "p.dll"}, Config{}, EnvClass},
		{"a malformed class", map[string]string{EnvDLL: "p.dll", EnvClass: "{123}"}, Config{}, EnvClass},
		{"a version that is not a number", map[string]string{EnvVersion: "two"}, Config{}, EnvVersion},
		{"a version ND does not have", map[string]string{EnvVersion: "3"}, Config{}, "ND version 3"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := ConfigFromEnv(func(k string) (string, bool) { v, ok := c.env[k]; return v, ok })
			switch {
			case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
				t.Fatalf("ConfigFromEnv = %+v, %v; want an error naming %q", got, err, c.err)
			case c.err == "" && err != nil:
				t.Fatalf("ConfigFromEnv: %v", err)
			case c.err == "" && (got.DLL != c.want.DLL || got.Class != c.want.Class || got.Version != c.want.Version):
				t.Fatalf("ConfigFromEnv = %+v, want %+v", got, c.want)
			}
		})
	}
}

// TestConfigError: a provider whose Config is not valid says so at every
// call, as ND_INVALID_PARAMETER with the reason.
func TestConfigError(t *testing.T) {
	p := New(Config{DLL: "p.dll"})
	_, err := p.Addresses()
	if err == nil || !strings.Contains(err.Error(), EnvClass) || !strings.Contains(err.Error(), "ND_INVALID_PARAMETER") {
		t.Fatalf("Addresses with a DLL and no class = %v", err)
	}
}
