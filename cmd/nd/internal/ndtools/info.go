package ndtools

// nd info: the ND SDK's ndadapterinfo.

import (
	"context"
	"flag"
	"fmt"
	"io"
	"math/bits"
	"net/netip"

	"github.com/godirect/nd"
	"github.com/godirect/nd/cmd/nd/internal/session"
)

// InfoFlags defines the flags of nd info.
func InfoFlags(stdout, stderr io.Writer) (*flag.FlagSet, session.RunFunc) {
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
			return session.Usagef("too many arguments: %q", args)
		}
		var addr netip.Addr
		if len(args) == 1 {
			var err error
			if addr, err = netip.ParseAddr(args[0]); err != nil {
				return session.Usagef("%q is not an IP address", args[0])
			}
			addr = addr.Unmap()
		}
		return info(stdout, *provider, addr)
	}
}

// info prints the provider's addresses and the adapter info for addr (the
// provider's first address if addr is the zero Addr).
func info(w io.Writer, providerName string, addr netip.Addr) error {
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
