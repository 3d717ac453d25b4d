//go:build windows && (amd64 || arm64)

package ndspi_test

import (
	"net/netip"

	"github.com/godirect/nd/ndtest"
)

// netip192 is an address of TEST-NET-1 that no provider serves.
func netip192() netip.Addr { return netip.MustParseAddr("192.0.2.249") }

func ndtestUnderWine() bool { return ndtest.UnderWine() }
