//go:build !(windows && cgo)

package main

import (
	"fmt"
	"os"
)

// Elsewhere than Windows (or without cgo) there is no DLL to build: the
// command says how to build it.
func main() {
	fmt.Fprintln(os.Stderr, "ndprovider is godirect's Network Direct provider, a Windows DLL; build it with:\n"+
		"  CGO_ENABLED=1 GOOS=windows GOARCH=amd64 CC=x86_64-w64-mingw32-gcc go build -buildmode=c-shared -o ndprovider.dll ./cmd/ndprovider")
	os.Exit(2)
}
