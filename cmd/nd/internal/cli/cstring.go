package cli

import (
	"bytes"
)

// CString returns b up to its first 0 byte (all of b if it has none).
func CString(b []byte) []byte {
	if i := bytes.IndexByte(b, 0); i >= 0 {
		return b[:i]
	}
	return b
}
