package ndspi

import (
	"fmt"

	"github.com/godirect/nd"
	"github.com/godirect/nd/internal/ndabi"
)

// comNames are the COM result codes that DllGetClassObject and
// IClassFactory return beside ND's statuses.
var comNames = map[uint32]string{
	ndabi.E_NOTIMPL:                 "E_NOTIMPL",
	ndabi.E_NOINTERFACE:             "E_NOINTERFACE",
	ndabi.E_POINTER:                 "E_POINTER",
	ndabi.E_FAIL:                    "E_FAIL",
	ndabi.E_OUTOFMEMORY:             "E_OUTOFMEMORY",
	ndabi.E_INVALIDARG:              "E_INVALIDARG",
	ndabi.CLASS_E_NOAGGREGATION:     "CLASS_E_NOAGGREGATION",
	ndabi.CLASS_E_CLASSNOTAVAILABLE: "CLASS_E_CLASSNOTAVAILABLE (the DLL serves no such class)",
}

// hresultText names an HRESULT: a COM code by its name, an ND status as
// nd.Status prints it.
func hresultText(st nd.Status) string {
	if name, ok := comNames[uint32(st)]; ok {
		return fmt.Sprintf("%s (%#08x)", name, uint32(st))
	}
	return st.Error()
}
