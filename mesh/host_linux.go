package mesh

import (
	"os"
	"strings"
)

// hostKey names this host as shared memory sees it: the boot id (one per
// running kernel) and the network namespace, whose abstract Unix socket
// names provider/shm listens on. Ranks with the same key reach each other
// over shared memory.
func hostKey() (string, error) {
	boot, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return "", err
	}
	ns, err := os.Readlink("/proc/self/ns/net")
	if err != nil {
		return "", err
	}
	id := strings.ReplaceAll(strings.TrimSpace(string(boot)), "-", "")
	ns = strings.TrimSuffix(strings.TrimPrefix(ns, "net:["), "]")
	return id + "." + ns, nil
}
