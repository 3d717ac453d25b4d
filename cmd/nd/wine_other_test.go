//go:build !windows

package main

// underWine reports whether the process runs under Wine: never here.
func underWine() bool { return false }
