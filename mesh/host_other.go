//go:build !linux

package mesh

import "os"

// hostKey names this host: its host name (provider/shm reaches every
// process of the host where there are no network namespaces).
func hostKey() (string, error) { return os.Hostname() }
