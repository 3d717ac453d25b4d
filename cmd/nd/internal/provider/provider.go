// Package provider is nd provider: godirect's ND provider DLL
// (cmd/ndprovider) in the Winsock catalog, where ND consumers (MS-MPI,
// ND's helper library, Microsoft's ND tools) find it: install, uninstall
// and list. Changing the catalog is Windows's and needs an elevated
// process; elsewhere the command says so.
package provider

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/godirect/nd/cmd/nd/internal/cli"
	"github.com/godirect/nd/internal/ndabi"
	"github.com/godirect/nd/internal/ndcatalog"
	"github.com/godirect/nd/internal/ndexport"
)

// transports are the DLL's providers, as the catalog names them.
var transports = []struct {
	name string
	id   ndabi.GUID
	desc string
}{
	{"tcp", ndexport.TCPClassID, "godirect ND provider: iWARP over TCP"},
	{"shm", ndexport.SHMClassID, "godirect ND provider: shared memory"},
}

// Flags defines the flags of nd provider.
func Flags(stdout, stderr io.Writer) (*flag.FlagSet, cli.RunFunc) {
	fs := flag.NewFlagSet("provider", flag.ContinueOnError)
	dll := fs.String("dll", "", "the provider DLL to install (default: ndprovider.dll beside nd.exe)")
	which := fs.String("transport", "tcp,shm", "the DLL's providers to install or uninstall, in catalog order: tcp, shm or both")
	fs.Usage = func() {
		w := fs.Output()
		fmt.Fprintln(w, "Usage: nd provider install [-dll PATH] [-transport tcp,shm]")
		fmt.Fprintln(w, "       nd provider uninstall [-transport tcp,shm]")
		fmt.Fprintln(w, "       nd provider list")
		fmt.Fprintln(w)
		fmt.Fprintln(w, "Registers godirect's ND provider DLL in the Winsock catalog (Windows,")
		fmt.Fprintln(w, "elevated), where ND consumers find it: one provider per transport, each")
		fmt.Fprintln(w, "with an ND v2 and an ND v1 entry. Installing again is harmless; the order")
		fmt.Fprintln(w, "of -transport is the order consumers search the two for an address")
		fmt.Fprintln(w, "both serve. list prints every ND provider of the catalog.")
		fmt.Fprintln(w)
		fmt.Fprintln(w, "Flags:")
		fs.PrintDefaults()
	}
	return fs, func(ctx context.Context, args []string) error {
		if len(args) != 1 {
			return cli.Usagef("nd provider needs one of install, uninstall, list")
		}
		var chosen []int
		for _, name := range strings.Split(*which, ",") {
			i := index(strings.TrimSpace(name))
			if i < 0 {
				return cli.Usagef("-transport: %q is not tcp or shm", name)
			}
			chosen = append(chosen, i)
		}
		switch args[0] {
		case "install":
			return install(stdout, *dll, chosen)
		case "uninstall":
			return uninstall(stdout, chosen)
		case "list":
			return list(stdout)
		}
		return cli.Usagef("nd provider: unknown action %q", args[0])
	}
}

func index(name string) int {
	for i, t := range transports {
		if t.name == name {
			return i
		}
	}
	return -1
}

// install registers the DLL's chosen providers, in that order.
func install(w io.Writer, dll string, chosen []int) error {
	if dll == "" {
		exe, err := os.Executable()
		if err != nil {
			return err
		}
		dll = filepath.Join(filepath.Dir(exe), "ndprovider.dll")
	}
	dll, err := filepath.Abs(dll)
	if err != nil {
		return err
	}
	if _, err := os.Stat(dll); err != nil {
		return err
	}
	for _, i := range chosen {
		t := transports[i]
		if err := ndcatalog.Install(ndcatalog.Entries(t.id, t.desc, dll)); err != nil {
			return fmt.Errorf("install %s: %w", t.name, err)
		}
		fmt.Fprintf(w, "installed %s %s: %s\n", t.name, t.id, dll)
	}
	return nil
}

// uninstall removes the DLL's chosen providers.
func uninstall(w io.Writer, chosen []int) error {
	for _, i := range chosen {
		t := transports[i]
		if err := ndcatalog.Uninstall(t.id); err != nil {
			return fmt.Errorf("uninstall %s: %w", t.name, err)
		}
		fmt.Fprintf(w, "uninstalled %s %s\n", t.name, t.id)
	}
	return nil
}

// list prints the catalog's ND providers, in the order consumers search
// them.
func list(w io.Writer) error {
	entries, err := ndcatalog.Read()
	if err != nil {
		return err
	}
	ps := ndcatalog.Providers(entries)
	if len(ps) == 0 {
		fmt.Fprintln(w, "no ND provider in the Winsock catalog")
	}
	for _, p := range ps {
		vs := make([]string, len(p.Versions))
		for i, v := range p.Versions {
			vs[i] = map[int32]string{ndabi.NDVersion1: "v1", ndabi.NDVersion2: "v2"}[v]
		}
		fmt.Fprintf(w, "%s  ND %s  %s  %s\n", p.ID, strings.Join(vs, "+"), p.Path, p.Name)
	}
	return nil
}
