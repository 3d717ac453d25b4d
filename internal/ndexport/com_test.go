package ndexport

import (
	"testing"

	"github.com/godirect/nd"
	"github.com/godirect/nd/internal/ndabi"
)

func TestGetClassObject(t *testing.T) {
	base := Live()
	ts := transports(t)
	ts[0].ClassID = TCPClassID
	_, st := GetClassObject(ts, SHMClassID, ndabi.IIDIND2Provider)
	want(t, "an unknown class", st, nd.Status(ndabi.CLASS_E_CLASSNOTAVAILABLE))
	_, st = GetClassObject(ts, TCPClassID, ndabi.IIDINDAdapter)
	want(t, "an interface that is not an entry point", st, nd.Status(ndabi.E_NOINTERFACE))
	o, st := GetClassObject(ts, TCPClassID, ndabi.IIDIND2Provider)
	want(t, "IND2Provider", st, nd.Success)
	if _, ok := o.(*Provider2); !ok {
		t.Fatalf("got %T", o)
	}
	want(t, "CanUnloadNow with a provider", CanUnloadNow(), nd.Status(ndabi.S_FALSE))
	BaseOf(o).Release()
	o, st = GetClassObject(ts, TCPClassID, ndabi.IIDClassFactory)
	want(t, "IClassFactory", st, nd.Success)
	f := o.(*ClassFactory)
	_, st = f.CreateInstance(true, ndabi.IIDINDProvider)
	want(t, "aggregation", st, nd.Status(ndabi.CLASS_E_NOAGGREGATION))
	_, st = f.CreateInstance(false, ndabi.IIDIND2Provider)
	want(t, "CreateInstance of IND2Provider", st, nd.Status(ndabi.E_NOINTERFACE))
	p, st := f.CreateInstance(false, ndabi.IIDINDProvider)
	want(t, "CreateInstance", st, nd.Success)
	f.LockServer(true)
	f.Release()
	p.Release()
	if base == 0 {
		want(t, "CanUnloadNow with a server lock", CanUnloadNow(), nd.Status(ndabi.S_FALSE))
	}
	f.LockServer(false)
	waitLive(t, base)
	if base == 0 {
		want(t, "CanUnloadNow", CanUnloadNow(), nd.Status(ndabi.S_OK))
	}
}
