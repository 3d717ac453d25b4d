//go:build windows && (amd64 || arm64)

package ndspi_test

import (
	"os"
	"testing"

	"github.com/godirect/nd/internal/ndabi"
	"github.com/godirect/nd/internal/ndexport"
	"github.com/godirect/nd/provider/ndspi"
)

// EnvTestDLL names godirect's ND provider DLL (cmd/ndprovider) for the
// tests that load it; .ci/wine/run-ndspi builds it and sets it. Without
// it those tests skip.
const EnvTestDLL = "GODIRECT_NDSPI_TEST_DLL"

// testDLL returns the DLL's path, or skips t.
func testDLL(t testing.TB) string {
	t.Helper()
	path := os.Getenv(EnvTestDLL)
	if path == "" {
		t.Skipf("%s is not set: it names godirect's ND provider DLL (build it with CGO_ENABLED=1 GOOS=windows CC=x86_64-w64-mingw32-gcc go build -buildmode=c-shared ./cmd/ndprovider; .ci/wine/run-ndspi does)", EnvTestDLL)
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("%s=%s: %v", EnvTestDLL, path, err)
	}
	return path
}

// transports are the DLL's providers by name.
var transports = []struct {
	name  string
	class ndabi.GUID
}{
	{"tcp", ndexport.TCPClassID},
	{"shm", ndexport.SHMClassID},
}

// dllProvider is provider ndspi over the DLL's transport class in ND
// version v.
func dllProvider(t testing.TB, class ndabi.GUID, v int) *ndspi.Provider {
	return ndspi.New(ndspi.Config{DLL: testDLL(t), Class: class, Version: v})
}
