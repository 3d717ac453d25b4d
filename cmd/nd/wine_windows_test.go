package main

import "golang.org/x/sys/windows"

// underWine reports whether the process runs under Wine, whose ntdll
// exports wine_get_version.
func underWine() bool {
	return windows.NewLazySystemDLL("ntdll.dll").NewProc("wine_get_version").Find() == nil
}
