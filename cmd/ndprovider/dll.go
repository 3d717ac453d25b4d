//go:build windows && cgo

package main

/*
#cgo CFLAGS: -I${SRCDIR}/../../internal/ndabi
#include "face.h"

void gdPinModule(void);
*/
import "C"

import (
	"unsafe"

	"github.com/godirect/nd"
	"github.com/godirect/nd/internal/ndabi"
	"github.com/godirect/nd/internal/ndexport"
)

// transports are the DLL's providers (tcp and shm), by class id.
var transports = ndexport.DefaultTransports()

func init() {
	// A Go runtime cannot be unloaded: the module stays loaded whatever
	// FreeLibrary the consumer calls (ND's helper library calls it when
	// DllCanUnloadNow says S_OK, and at NdCleanup).
	C.gdPinModule()
}

func main() {}

// gdDllGetClassObject is DllGetClassObject (dll.c exports it under its
// name, with windows.h's types).
//
//export gdDllGetClassObject
func gdDllGetClassObject(clsid, iid, ppv unsafe.Pointer) int32 {
	if ppv == nil {
		return hr(nd.Status(ndabi.E_POINTER))
	}
	*(*unsafe.Pointer)(ppv) = nil
	c, ok1 := guidAt(clsid)
	i, ok2 := guidAt(iid)
	if !ok1 || !ok2 {
		return hr(nd.Status(ndabi.E_POINTER))
	}
	o, st := ndexport.GetClassObject(transports, c, i)
	if st != nd.Success {
		return hr(st)
	}
	return put(ppv, o, kindOf(o), nd.Success)
}

// gdDllCanUnloadNow is DllCanUnloadNow.
//
//export gdDllCanUnloadNow
func gdDllCanUnloadNow() int32 { return hr(ndexport.CanUnloadNow()) }

//export gdQueryInterface
func gdQueryInterface(this, iid, ppv unsafe.Pointer) int32 {
	if ppv == nil {
		return hr(nd.Status(ndabi.E_POINTER))
	}
	*(*unsafe.Pointer)(ppv) = nil
	o := object(this)
	g, ok := guidAt(iid)
	switch {
	case o == nil:
		return invalidHandle
	case !ok:
		return hr(nd.Status(ndabi.E_POINTER))
	}
	k := kindOf(o)
	match := g == ndabi.IIDUnknown
	for _, x := range interfaces[k] {
		match = match || g == x
	}
	if !match {
		return hr(nd.Status(ndabi.E_NOINTERFACE))
	}
	ndexport.BaseOf(o).AddRef()
	*(*unsafe.Pointer)(ppv) = this
	return 0
}

//export gdAddRef
func gdAddRef(this unsafe.Pointer) uint32 {
	o := object(this)
	if o == nil {
		return 0
	}
	return ndexport.BaseOf(o).AddRef()
}

//export gdRelease
func gdRelease(this unsafe.Pointer) uint32 {
	o := object(this)
	if o == nil {
		return 0
	}
	n := ndexport.BaseOf(o).Release()
	if n == 0 {
		retire(this)
	}
	return n
}

//export gdCancelOverlappedRequests
func gdCancelOverlappedRequests(this unsafe.Pointer) int32 {
	o := object(this)
	if o == nil {
		return invalidHandle
	}
	return hr(ndexport.BaseOf(o).CancelOverlappedRequests())
}

//export gdGetOverlappedResult1
func gdGetOverlappedResult1(this, ov, bytes unsafe.Pointer, wait int32) int32 {
	o := object(this)
	if o == nil {
		return invalidHandle
	}
	if ov == nil {
		return hr(nd.ErrInvalidParameter1)
	}
	if bytes != nil {
		*(*uintptr)(bytes) = 0
	}
	return hr(ndexport.BaseOf(o).GetOverlappedResult((*ndabi.Overlapped)(ov), wait != 0))
}

//export gdGetOverlappedResult2
func gdGetOverlappedResult2(this, ov unsafe.Pointer, wait int32) int32 {
	o := object(this)
	if o == nil {
		return invalidHandle
	}
	if ov == nil {
		return hr(nd.ErrInvalidParameter1)
	}
	return hr(ndexport.BaseOf(o).GetOverlappedResult((*ndabi.Overlapped)(ov), wait != 0))
}

//export gdGetNotifyAffinity
func gdGetNotifyAffinity(this, group, affinity unsafe.Pointer) int32 {
	if object(this) == nil {
		return invalidHandle
	}
	return hr(ndexport.GetNotifyAffinity((*uint16)(group), (*uintptr)(affinity)))
}

//export gdClassFactoryCreateInstance
func gdClassFactoryCreateInstance(this, outer, iid, ppv unsafe.Pointer) int32 {
	f, ok := self[*ndexport.ClassFactory](this)
	if !ok {
		return invalidHandle
	}
	if ppv == nil {
		return hr(nd.Status(ndabi.E_POINTER))
	}
	*(*unsafe.Pointer)(ppv) = nil
	g, ok := guidAt(iid)
	if !ok {
		return hr(nd.Status(ndabi.E_POINTER))
	}
	p, st := f.CreateInstance(outer != nil, g)
	return put(ppv, p, kindProvider1, st)
}

//export gdClassFactoryLockServer
func gdClassFactoryLockServer(this unsafe.Pointer, lock int32) int32 {
	f, ok := self[*ndexport.ClassFactory](this)
	if !ok {
		return invalidHandle
	}
	return hr(f.LockServer(lock != 0))
}
