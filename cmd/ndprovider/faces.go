//go:build windows && cgo

package main

/*
#cgo CFLAGS: -I${SRCDIR}/../../internal/ndabi
#include <stdlib.h>
#include "face.h"
*/
import "C"

import (
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/godirect/nd"
	"github.com/godirect/nd/internal/ndabi"
	"github.com/godirect/nd/internal/ndexport"
)

// The kinds of exported objects, in gen_vtables.go's order: each has its
// method table.
const (
	kindClassFactory = iota
	kindProvider1
	kindAdapter1
	kindCQ1
	kindEndpoint1
	kindConnector1
	kindListen1
	kindWindow1
	kindProvider2
	kindAdapter2
	kindCQ2
	kindSRQ2
	kindRegion2
	kindWindow2
	kindQueuePair2
	kindConnector2
	kindListener2
	numKinds
)

// quarantine is how many released faces of a kind wait before one is used
// for a new object of the kind: a consumer that calls through a pointer it
// released finds no object (ND_INVALID_HANDLE) for that long, and then at
// worst an object of the same interface, never memory given back.
const quarantine = 256

// faces maps the ids in faces to the exported objects, and faces (as
// passed back by the consumer) to their ids. Its methods are safe for
// concurrent use.
var faces = struct {
	sync.RWMutex
	objs    []ndexport.Object // by id; id 0 names nothing
	byFace  map[uintptr]faceEntry
	freeIDs []uintptr
	dead    [numKinds][]*C.GdFace // released faces, oldest first
}{objs: make([]ndexport.Object, 1), byFace: map[uintptr]faceEntry{}}

type faceEntry struct {
	id   uintptr
	kind int
}

// export gives o a face (a COM interface pointer) of kind and returns it.
func export(o ndexport.Object, kind int) unsafe.Pointer {
	faces.Lock()
	defer faces.Unlock()
	var f *C.GdFace
	if dead := faces.dead[kind]; len(dead) > quarantine {
		f = dead[0]
		faces.dead[kind] = dead[1:]
	} else {
		f = (*C.GdFace)(C.malloc(C.sizeof_GdFace))
		f.lpVtbl = C.gdVtbl(C.int(kind))
	}
	var id uintptr
	if n := len(faces.freeIDs); n > 0 {
		id = faces.freeIDs[n-1]
		faces.freeIDs = faces.freeIDs[:n-1]
		faces.objs[id] = o
	} else {
		id = uintptr(len(faces.objs))
		faces.objs = append(faces.objs, o)
	}
	faces.byFace[uintptr(unsafe.Pointer(f))] = faceEntry{id, kind}
	atomic.StoreUintptr((*uintptr)(unsafe.Pointer(&f.id)), id)
	ndexport.BaseOf(o).Face.Store(uintptr(unsafe.Pointer(f)))
	return unsafe.Pointer(f)
}

// retire takes the face this from its object, whose last reference went.
func retire(this unsafe.Pointer) {
	faces.Lock()
	defer faces.Unlock()
	e, ok := faces.byFace[uintptr(this)]
	if !ok {
		return
	}
	delete(faces.byFace, uintptr(this))
	faces.objs[e.id] = nil
	faces.freeIDs = append(faces.freeIDs, e.id)
	f := (*C.GdFace)(this)
	atomic.StoreUintptr((*uintptr)(unsafe.Pointer(&f.id)), 0)
	faces.dead[e.kind] = append(faces.dead[e.kind], f)
}

// object is the object behind this, the face a call came through (nil once
// its last reference went).
func object(this unsafe.Pointer) ndexport.Object {
	if this == nil {
		return nil
	}
	id := atomic.LoadUintptr((*uintptr)(unsafe.Pointer(&(*C.GdFace)(this).id)))
	faces.RLock()
	defer faces.RUnlock()
	if id == 0 || id >= uintptr(len(faces.objs)) {
		return nil
	}
	return faces.objs[id]
}

// self is the object of type T behind this.
func self[T ndexport.Object](this unsafe.Pointer) (T, bool) {
	o, ok := object(this).(T)
	return o, ok
}

// arg is the object of type T behind a pointer the consumer passed as an
// argument, or nil if it is not a live face of such an object (it is not
// read unless it is one of the DLL's faces).
func arg[T ndexport.Object](p unsafe.Pointer) T {
	faces.RLock()
	e, ok := faces.byFace[uintptr(p)]
	var o ndexport.Object
	if ok {
		o = faces.objs[e.id]
	}
	faces.RUnlock()
	t, _ := o.(T)
	return t
}

// hr is st as the HRESULT a method returns.
func hr(st nd.Status) int32 { return int32(st) }

var invalidHandle = hr(nd.ErrInvalidHandle)

// guidAt reads the consumer's GUID at p (a REFIID or REFCLSID).
func guidAt(p unsafe.Pointer) (ndabi.GUID, bool) {
	if p == nil {
		return ndabi.GUID{}, false
	}
	return *(*ndabi.GUID)(p), true
}

// put writes o's new face, of kind, to the consumer's out pointer pp
// (which the caller checked), or nil when st is not success.
func put(pp unsafe.Pointer, o ndexport.Object, kind int, st nd.Status) int32 {
	if st != nd.Success {
		*(*unsafe.Pointer)(pp) = nil
		return hr(st)
	}
	*(*unsafe.Pointer)(pp) = export(o, kind)
	return hr(nd.Success)
}

// kindOf is the kind of an exported object.
func kindOf(o ndexport.Object) int {
	switch o.(type) {
	case *ndexport.ClassFactory:
		return kindClassFactory
	case *ndexport.Provider1:
		return kindProvider1
	case *ndexport.Adapter1:
		return kindAdapter1
	case *ndexport.CQ1:
		return kindCQ1
	case *ndexport.Endpoint1:
		return kindEndpoint1
	case *ndexport.Connector1:
		return kindConnector1
	case *ndexport.Listen1:
		return kindListen1
	case *ndexport.Window1:
		return kindWindow1
	case *ndexport.Provider2:
		return kindProvider2
	case *ndexport.Adapter2:
		return kindAdapter2
	case *ndexport.CQ2:
		return kindCQ2
	case *ndexport.SRQ2:
		return kindSRQ2
	case *ndexport.Region2:
		return kindRegion2
	case *ndexport.Window2:
		return kindWindow2
	case *ndexport.QueuePair2:
		return kindQueuePair2
	case *ndexport.Connector2:
		return kindConnector2
	case *ndexport.Listener2:
		return kindListener2
	}
	return -1
}

// interfaces are the interface ids each kind answers QueryInterface for,
// IUnknown's aside.
var interfaces = [numKinds][]ndabi.GUID{
	kindClassFactory: {ndabi.IIDClassFactory},
	kindProvider1:    {ndabi.IIDINDProvider},
	kindAdapter1:     {ndabi.IIDINDOverlapped, ndabi.IIDINDAdapter},
	kindCQ1:          {ndabi.IIDINDOverlapped, ndabi.IIDINDCompletionQueue},
	kindEndpoint1:    {ndabi.IIDINDEndpoint},
	kindConnector1:   {ndabi.IIDINDOverlapped, ndabi.IIDINDConnector},
	kindListen1:      {ndabi.IIDINDOverlapped, ndabi.IIDINDListen},
	kindWindow1:      {ndabi.IIDINDMemoryWindow},
	kindProvider2:    {ndabi.IIDIND2Provider},
	kindAdapter2:     {ndabi.IIDIND2Adapter},
	kindCQ2:          {ndabi.IIDIND2Overlapped, ndabi.IIDIND2CompletionQueue},
	kindSRQ2:         {ndabi.IIDIND2Overlapped, ndabi.IIDIND2SharedReceiveQueue},
	kindRegion2:      {ndabi.IIDIND2Overlapped, ndabi.IIDIND2MemoryRegion},
	kindWindow2:      {ndabi.IIDIND2MemoryWindow},
	kindQueuePair2:   {ndabi.IIDIND2QueuePair},
	kindConnector2:   {ndabi.IIDIND2Overlapped, ndabi.IIDIND2Connector},
	kindListener2:    {ndabi.IIDIND2Overlapped, ndabi.IIDIND2Listener},
}
