package mesh

import (
	"fmt"
	"net/netip"
	"strings"
)

// card is a rank's business card: its host, and where each of its
// providers listens (the zero AddrPort where it does not).
type card struct {
	host      string
	local     netip.AddrPort // shared memory
	localName string
	remote    netip.AddrPort // between hosts
	remoteNm  string
}

func cardKey(rank int) string { return fmt.Sprintf("godirect-card-%d", rank) }

// String is the card as put in the key-value space:
// HOST|NAME:ADDR:PORT|NAME:ADDR:PORT, local provider first.
func (c card) String() string {
	return fmt.Sprintf("%s|%s:%s|%s:%s", c.host, c.localName, c.local, c.remoteNm, c.remote)
}

// parseCard parses a card; what a peer put is checked like any input.
func parseCard(s string) (card, error) {
	parts := strings.Split(s, "|")
	if len(parts) != 3 || parts[0] == "" {
		return card{}, fmt.Errorf("business card %q: want HOST|NAME:ADDR:PORT|NAME:ADDR:PORT", s)
	}
	c := card{host: parts[0]}
	for i, dst := range []struct {
		name *string
		ap   *netip.AddrPort
	}{{&c.localName, &c.local}, {&c.remoteNm, &c.remote}} {
		name, ap, ok := strings.Cut(parts[i+1], ":")
		if !ok || name == "" {
			return card{}, fmt.Errorf("business card %q: %q is not NAME:ADDR:PORT", s, parts[i+1])
		}
		a, err := netip.ParseAddrPort(ap)
		if err != nil {
			return card{}, fmt.Errorf("business card %q: %w", s, err)
		}
		*dst.name, *dst.ap = name, a
	}
	return c, nil
}
