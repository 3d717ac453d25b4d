package ndtools

// nd info: the ND SDK's ndadapterinfo.

import (
	"cmp"
	"context"
	"flag"
	"fmt"
	"io"
	"math/bits"
	"net/netip"
	"strings"

	"github.com/godirect/nd"
	"github.com/godirect/nd/cmd/nd/internal/cli"
	"github.com/godirect/nd/cmd/nd/internal/session"
	"github.com/godirect/nd/provider/ndspi"
)

// InfoFlags defines the flags of nd info.
func InfoFlags(stdout, stderr io.Writer) (*flag.FlagSet, cli.RunFunc) {
	fs := flag.NewFlagSet("info", flag.ContinueOnError)
	provider := session.ProviderFlag(fs)
	fs.Usage = func() {
		w := fs.Output()
		fmt.Fprintln(w, "Usage: nd info [-provider NAME] [ADDRESS]")
		fmt.Fprintln(w)
		fmt.Fprintln(w, "Prints the provider's name and address list, then opens the adapter for")
		fmt.Fprintln(w, "ADDRESS (default: the provider's first address) and prints what Query")
		fmt.Fprintln(w, "reports, one field per line, as the ND SDK's ndadapterinfo does.")
		fmt.Fprintln(w)
		fmt.Fprintln(w, "Flags:")
		fs.PrintDefaults()
	}
	return fs, func(ctx context.Context, args []string) error {
		if len(args) > 1 {
			return cli.Usagef("too many arguments: %q", args)
		}
		var addr netip.Addr
		if len(args) == 1 {
			var err error
			if addr, err = netip.ParseAddr(args[0]); err != nil {
				return cli.Usagef("%q is not an IP address", args[0])
			}
			addr = addr.Unmap()
		}
		return info(stdout, *provider, addr)
	}
}

// info prints the provider's addresses and the adapter info for addr (the
// provider's first address if addr is the zero Addr). For provider ndspi
// it first lists each ND provider found (installedInfo).
func info(w io.Writer, providerName string, addr netip.Addr) error {
	if sp, ok := nd.OpenProvider(providerName); ok == nil {
		if p, isNDSPI := sp.(*ndspi.Provider); isNDSPI {
			if err := installedInfo(w, p); err != nil {
				return err
			}
		}
	}
	p, addrs, err := session.OpenProvider(providerName)
	if err != nil {
		return err
	}
	if !addr.IsValid() {
		addr = addrs[0]
	}
	a, err := session.OpenAdapter(p, addrs, addr)
	if err != nil {
		return err
	}
	defer a.Close()
	ai, err := a.Query()
	if err != nil {
		return fmt.Errorf("adapter %s: Query: %w", addr, err)
	}

	fmt.Fprintf(w, "Provider: %s\n", p.Name())
	fmt.Fprintln(w, "Addresses:")
	for _, a := range addrs {
		fmt.Fprintf(w, "    %s\n", a)
	}
	fmt.Fprintf(w, "Adapter: %s\n", a.Address())
	if m, ok := p.(interface{ OneSidedMode() string }); ok {
		fmt.Fprintf(w, "One-sided: %s\n", m.OneSidedMode())
	}
	fmt.Fprintln(w)
	printAdapterInfo(w, ai)
	return nil
}

// installedInfo lists the ND providers provider ndspi found: each one's
// class id, name, DLL, ND version and addresses, and its adapter's limits
// (printAdapterInfo, indented), or why it cannot be used.
func installedInfo(w io.Writer, p *ndspi.Provider) error {
	found, err := p.Installed()
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "ND providers found: %d\n", len(found))
	for _, in := range found {
		fmt.Fprintf(w, "\n%s %s\n", in.ID, cmp.Or(in.Name, "(the DLL "+ndspi.EnvDLL+" names)"))
		fmt.Fprintf(w, "    Path: %s\n", in.Path)
		if in.Err != nil {
			fmt.Fprintf(w, "    Not usable: %v\n", in.Err)
			continue
		}
		fmt.Fprintf(w, "    ND version: %d\n", in.Version)
		fmt.Fprintln(w, "    Addresses:")
		for _, a := range in.Addresses {
			fmt.Fprintf(w, "        %s\n", a)
		}
		if in.Limits != nil {
			fmt.Fprintf(w, "    Limits (the adapter of %s):\n", in.Addresses[0])
			printAdapterInfo(indent{w, "        "}, *in.Limits)
		}
	}
	fmt.Fprintln(w)
	return nil
}

// indent writes each line it is given with a prefix.
type indent struct {
	w      io.Writer
	prefix string
}

func (in indent) Write(b []byte) (int, error) {
	for _, line := range strings.SplitAfter(string(b), "\n") {
		if line == "" {
			continue
		}
		if _, err := io.WriteString(in.w, in.prefix+line); err != nil {
			return 0, err
		}
	}
	return len(b), nil
}

// printAdapterInfo prints ai one field per line under the ND_ADAPTER_INFO
// field names, then the set adapter flags by their ND names, one per
// indented line, and any bit without a name in hex.
func printAdapterInfo(w io.Writer, ai nd.AdapterInfo) {
	fmt.Fprintf(w, "VendorId: 0x%08x\n", ai.VendorID)
	fmt.Fprintf(w, "DeviceId: %#x\n", ai.DeviceID)
	fields := []struct {
		name  string
		value int
	}{
		{"MaxInboundSge", ai.MaxInboundSGE},
		{"MaxInboundRequests", ai.MaxInboundRequests},
		{"MaxInboundLength", ai.MaxInboundLength},
		{"MaxOutboundSge", ai.MaxOutboundSGE},
		{"MaxOutboundRequests", ai.MaxOutboundRequests},
		{"MaxOutboundLength", ai.MaxOutboundLength},
		{"MaxInlineData", ai.MaxInlineData},
		{"MaxInboundReadLimit", ai.MaxInboundReadLimit},
		{"MaxOutboundReadLimit", ai.MaxOutboundReadLimit},
		{"MaxSharedReceiveQueueDepth", ai.MaxSharedReceiveQueueDepth}, // ND v2's; 0: none
		{"MaxCqEntries", ai.MaxCQEntries},
		{"MaxRegistrationSize", ai.MaxRegistrationSize},
		{"MaxWindowSize", ai.MaxWindowSize},
		{"LargeRequestThreshold", ai.LargeRequestThreshold},
		{"MaxCallerData", ai.MaxCallerData},
		{"MaxCalleeData", ai.MaxCalleeData},
	}
	for _, f := range fields {
		fmt.Fprintf(w, "%s: %d\n", f.name, f.value)
	}
	fmt.Fprintf(w, "AdapterFlags: 0x%08x\n", uint32(ai.Flags))
	for _, name := range adapterFlagNames(ai.Flags) {
		fmt.Fprintf(w, "    %s\n", name)
	}
}

// adapterFlagName maps each adapter flag to its ND name.
var adapterFlagName = map[nd.AdapterFlags]string{
	nd.AdapterInOrderDMA:            "ND_ADAPTER_FLAG_IN_ORDER_DMA_SUPPORTED",
	nd.AdapterCQInterruptModeration: "ND_ADAPTER_FLAG_CQ_INTERRUPT_MODERATION_SUPPORTED",
	nd.AdapterMultiEngine:           "ND_ADAPTER_FLAG_MULTI_ENGINE_SUPPORTED",
	nd.AdapterCQResize:              "ND_ADAPTER_FLAG_CQ_RESIZE_SUPPORTED",
	nd.AdapterLoopbackConnections:   "ND_ADAPTER_FLAG_LOOPBACK_CONNECTIONS_SUPPORTED",
}

// adapterFlagNames returns the ND names of the bits set in f, lowest bit
// first, and the bits without a name together in hex.
func adapterFlagNames(f nd.AdapterFlags) []string {
	var names []string
	var unknown nd.AdapterFlags
	for f != 0 {
		bit := nd.AdapterFlags(1) << bits.TrailingZeros32(uint32(f))
		f &^= bit
		if name, ok := adapterFlagName[bit]; ok {
			names = append(names, name)
		} else {
			unknown |= bit
		}
	}
	if unknown != 0 {
		names = append(names, fmt.Sprintf("0x%08x (unknown flags)", uint32(unknown)))
	}
	return names
}
