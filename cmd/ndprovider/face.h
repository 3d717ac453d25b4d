/*
 * face.h: the C face of an object the DLL exports. A COM interface pointer
 * points to a face: its first word is the method table (vtables.c), its
 * second the object's id in faces.go's table. Faces are C memory and hold
 * no Go pointer; a face whose object is gone keeps id 0, so that a call
 * through a released pointer finds no object.
 */
#ifndef GODIRECT_NDPROVIDER_FACE_H
#define GODIRECT_NDPROVIDER_FACE_H

#include <stdint.h>
#include "ndabi.h"

typedef struct GdFace {
	void *const *lpVtbl;
	uintptr_t id;
} GdFace;

void *const *gdVtbl(int kind);

#endif
