//go:build !windows

package ndtest

// UnderWine reports whether the process is a Windows program running under
// Wine: never on this platform. Safe for concurrent use.
func UnderWine() bool { return false }
