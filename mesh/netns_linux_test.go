package mesh

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// cluster is hosts made of network namespaces: host i is namespace
// NAME-i with the address 192.0.2.(i+1)/24 (a documentation range, routed
// nowhere), all on one bridge in namespace NAME-br, and the launcher's own
// namespace NAME-l at 192.0.2.254. Everything is deleted at the test's
// end.
type cluster struct {
	hosts    []string
	launcher string
	exec     string // the script Hydra runs each host's proxy through
}

func newCluster(t *testing.T, n int) *cluster {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("network namespaces need root")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skip("no ip command (iproute2)")
	}
	name := fmt.Sprintf("gdm%d", os.Getpid()%100000)
	for i := 0; ; i++ {
		if _, err := os.Stat("/run/netns/" + name + "-br"); os.IsNotExist(err) {
			break
		}
		name = fmt.Sprintf("gdm%d%c", os.Getpid()%100000, 'a'+i)
	}
	c := &cluster{launcher: name + "-l"}
	var made []string
	t.Cleanup(func() {
		for _, ns := range made {
			exec.Command("ip", "netns", "del", ns).Run()
		}
	})
	ip := func(args ...string) {
		t.Helper()
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			t.Fatalf("ip %s: %v: %s", strings.Join(args, " "), err, out)
		}
	}
	br := name + "-br"
	made = append(made, br)
	ip("netns", "add", br)
	ip("-n", br, "link", "add", "br0", "type", "bridge")
	ip("-n", br, "link", "set", "br0", "up")
	add := func(ns string, i int, addr string) {
		made = append(made, ns)
		ip("netns", "add", ns)
		ip("-n", br, "link", "add", fmt.Sprint("h", i), "type", "veth", "peer", "name", "eth0", "netns", ns)
		ip("-n", br, "link", "set", fmt.Sprint("h", i), "master", "br0", "up")
		ip("-n", ns, "addr", "add", addr+"/24", "dev", "eth0")
		ip("-n", ns, "link", "set", "eth0", "up")
		ip("-n", ns, "link", "set", "lo", "up")
	}
	for i := range n {
		ns := fmt.Sprintf("%s-%d", name, i)
		add(ns, i, fmt.Sprintf("192.0.2.%d", i+1))
		c.hosts = append(c.hosts, ns)
	}
	add(c.launcher, n, "192.0.2.254")
	// Hydra calls its launcher as "EXEC -x HOST COMMAND", COMMAND being one
	// shell word list; here HOST is a namespace.
	c.exec = filepath.Join(t.TempDir(), "netns-launcher")
	script := "#!/bin/sh\n[ \"$1\" = -x ] && shift\nhost=$1\nshift\nexec ip netns exec \"$host\" sh -c \"$*\"\n"
	if err := os.WriteFile(c.exec, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return c
}

// mpiexec is the command line that runs p ranks, ppn per host, from the
// launcher's namespace (its address is where the proxies call back).
func (c *cluster) mpiexec(path string, p, ppn int) []string {
	var hosts []string
	for _, h := range c.hosts {
		hosts = append(hosts, fmt.Sprintf("%s:%d", h, ppn))
	}
	return []string{"ip", "netns", "exec", c.launcher, path,
		"-launcher", "ssh", "-launcher-exec", c.exec, "-localhost", "192.0.2.254",
		"-hosts", strings.Join(hosts, ","), "-n", fmt.Sprint(p)}
}
