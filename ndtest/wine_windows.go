package ndtest

import "golang.org/x/sys/windows"

// UnderWine reports whether the process is a Windows program running under
// Wine, whose ntdll exports wine_get_version. Tests use it to name what
// Wine does differently from Windows (and skip only that). Safe for
// concurrent use.
func UnderWine() bool {
	return windows.NewLazySystemDLL("ntdll.dll").NewProc("wine_get_version").Find() == nil
}
