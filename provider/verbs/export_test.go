//go:build verbs && linux

package verbs

import "github.com/godirect/nd"

// SetAnnouncedRNRRetry makes the connections of a (a *Adapter) announce n
// as their RNR retry count, as rping and perftest announce 7, so that a
// test can stand for such a program. Call it before a connects or listens.
func SetAnnouncedRNRRetry(a nd.Adapter, n int) { a.(*Adapter).rnrRetry = n }
