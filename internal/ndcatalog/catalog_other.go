//go:build !windows

package ndcatalog

import "github.com/godirect/nd/internal/ndabi"

// Read returns ErrNotSupported: there is no Winsock catalog here.
func Read() ([]Entry, error) { return nil, ErrNotSupported }

// Install returns ErrNotSupported: there is no Winsock catalog here.
func Install([]Entry) error { return ErrNotSupported }

// Uninstall returns ErrNotSupported: there is no Winsock catalog here.
func Uninstall(ndabi.GUID) error { return ErrNotSupported }
