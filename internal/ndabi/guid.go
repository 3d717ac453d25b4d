package ndabi

import (
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
)

// GUID is a Windows GUID (an interface or class identifier) in its binary
// layout: 16 bytes, Data1 to Data3 in the machine's byte order.
type GUID struct {
	Data1 uint32
	Data2 uint16
	Data3 uint16
	Data4 [8]byte
}

var errGUID = errors.New("ndabi: a GUID is written {xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx}")

// ParseGUID parses a GUID in registry form, {xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx}
// (the braces may be left out; hex digits in either case).
func ParseGUID(s string) (GUID, error) {
	s = strings.TrimSuffix(strings.TrimPrefix(s, "{"), "}")
	if len(s) != 36 || s[8] != '-' || s[13] != '-' || s[18] != '-' || s[23] != '-' {
		return GUID{}, errGUID
	}
	b, err := hex.DecodeString(s[0:8] + s[9:13] + s[14:18] + s[19:23] + s[24:36])
	if err != nil {
		return GUID{}, errGUID
	}
	var g GUID
	g.Data1 = uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
	g.Data2 = uint16(b[4])<<8 | uint16(b[5])
	g.Data3 = uint16(b[6])<<8 | uint16(b[7])
	copy(g.Data4[:], b[8:])
	return g, nil
}

// MustParseGUID is ParseGUID for constants: it panics on a malformed s.
func MustParseGUID(s string) GUID {
	g, err := ParseGUID(s)
	if err != nil {
		panic(err)
	}
	return g
}

// String returns g in registry form, {XXXXXXXX-XXXX-XXXX-XXXX-XXXXXXXXXXXX}.
func (g GUID) String() string {
	return fmt.Sprintf("{%08X-%04X-%04X-%02X%02X-%X}", g.Data1, g.Data2, g.Data3, g.Data4[0], g.Data4[1], g.Data4[2:])
}

// The interface identifiers of ndspi.h, and the two of COM that ND uses.
// IND2MemoryWindow and INDMemoryWindow share theirs.
var (
	IIDUnknown      = MustParseGUID("{00000000-0000-0000-C000-000000000046}")
	IIDClassFactory = MustParseGUID("{00000001-0000-0000-C000-000000000046}")

	IIDIND2Overlapped         = MustParseGUID("{ABF72719-B016-4A40-A6F7-622791A7044C}")
	IIDIND2CompletionQueue    = MustParseGUID("{20CC445E-64A0-4CBB-AA75-F6A7251FDA9E}")
	IIDIND2SharedReceiveQueue = MustParseGUID("{AABD67DC-459A-4DB1-826B-56CFCC278883}")
	IIDIND2MemoryWindow       = MustParseGUID("{070FE1F5-0AB5-4361-88DB-974BA704D4B9}")
	IIDIND2MemoryRegion       = MustParseGUID("{55DFEA2F-BC56-4982-8A45-0301BE46C413}")
	IIDIND2QueuePair          = MustParseGUID("{EEF2F332-B75D-4063-BCE3-3A0BAD2D02CE}")
	IIDIND2Connector          = MustParseGUID("{7DD615C4-6B4C-4866-950C-F3B1D25A5302}")
	IIDIND2Listener           = MustParseGUID("{65D23D83-3A57-4E02-86A4-350165C2D130}")
	IIDIND2Adapter            = MustParseGUID("{D89C798C-4823-4D69-846C-DFDCCFF9E5F3}")
	IIDIND2Provider           = MustParseGUID("{49EAE6C1-76C4-46D0-8003-5C2EAA2C9A8E}")

	IIDINDOverlapped      = MustParseGUID("{C859E15E-75E2-4FE3-8D6D-0DFF36F02442}")
	IIDINDCompletionQueue = MustParseGUID("{1245A633-2A32-473A-830C-E05D1F869D02}")
	IIDINDMemoryWindow    = MustParseGUID("{070FE1F5-0AB5-4361-88DB-974BA704D4B9}")
	IIDINDEndpoint        = MustParseGUID("{DBD00EAB-B679-44A9-BD65-E82F3DE12D1A}")
	IIDINDConnector       = MustParseGUID("{1BCAF2D1-E274-4AEB-AC57-CD5D4376E0B7}")
	IIDINDListen          = MustParseGUID("{BB902588-BA3F-4441-9FE1-3B6795E4E668}")
	IIDINDAdapter         = MustParseGUID("{A023C5A0-5B73-43BC-8D20-33AA07E9510F}")
	IIDINDProvider        = MustParseGUID("{0C5DD316-5FDF-47E6-B2D0-2A6EDA8D39DD}")
)
