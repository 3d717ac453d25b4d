package ndabi

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"runtime"
	"testing"
	"unsafe"

	"github.com/godirect/nd"
)

// cStructs maps each Go structure to the C structure it mirrors.
var cStructs = []struct {
	c    string
	goes any
	size uintptr // the size ndspi.h's structure has on 64-bit Windows
}{
	{"ND_RESULT", Result{}, 16},
	{"ND_SGE", SGE{}, 24},
	{"ND_ADAPTER_INFO1", AdapterInfo1{}, 128},
	{"ND2_ADAPTER_INFO", AdapterInfo2{}, 96},
	{"ND2_RESULT", Result2{}, 32},
	{"ND2_SGE", SGE2{}, 16},
	{"OVERLAPPED", Overlapped{}, 32},
	{"SOCKET_ADDRESS", SocketAddress{}, 16},
}

// TestLayoutSizes checks the Go structures' sizes against those of
// ndspi.h's structures on 64-bit Windows, and that nd.Result is laid out
// as ND_RESULT.
func TestLayoutSizes(t *testing.T) {
	if unsafe.Sizeof(uintptr(0)) != 8 {
		t.Skip("the layouts are those of 64-bit Windows")
	}
	for _, s := range cStructs {
		if got := reflect.TypeOf(s.goes).Size(); got != s.size {
			t.Errorf("%s: size %d, want %d", s.c, got, s.size)
		}
	}
	var r nd.Result
	if unsafe.Sizeof(r) != unsafe.Sizeof(Result{}) ||
		unsafe.Offsetof(r.Status) != unsafe.Offsetof(Result{}.Status) ||
		unsafe.Offsetof(r.BytesTransferred) != unsafe.Offsetof(Result{}.BytesTransferred) ||
		unsafe.Sizeof(r.Status) != 4 || unsafe.Sizeof(r.BytesTransferred) != 8 {
		t.Errorf("nd.Result is not laid out as ND_RESULT")
	}
	if unsafe.Offsetof(Result2{}.RequestType) != 24 || unsafe.Offsetof(AdapterInfo2{}.AdapterFlags) != 92 {
		t.Errorf("ND2 structures misplaced")
	}
}

// TestSlotsGenerated checks that slots.go is what SlotsSource generates
// from Interfaces (run go generate after changing Interfaces).
func TestSlotsGenerated(t *testing.T) {
	have, err := os.ReadFile("slots.go")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(have, SlotsSource()) {
		t.Fatal("slots.go is out of date: run go generate ./internal/ndabi")
	}
	if IND2AdapterCreateListener != 13 || INDConnectorDisconnect != 14 || IND2QueuePairWrite != 9 ||
		INDEndpointWrite != 12 || IND2ProviderOpenAdapter != 5 || INDListenGetConnectionRequest != 5 {
		t.Fatal("slots.go disagrees with ndspi.h's order")
	}
}

// TestGUIDText checks ParseGUID and String against a known GUID's bytes.
func TestGUIDText(t *testing.T) {
	g := IIDIND2Adapter
	want := GUID{0xd89c798c, 0x4823, 0x4d69, [8]byte{0x84, 0x6c, 0xdf, 0xdc, 0xcf, 0xf9, 0xe5, 0xf3}}
	if g != want {
		t.Fatalf("IIDIND2Adapter = %+v, want %+v", g, want)
	}
	if s := g.String(); s != "{D89C798C-4823-4D69-846C-DFDCCFF9E5F3}" {
		t.Fatalf("String = %s", s)
	}
	for _, bad := range []string{"", "{D89C798C-4823-4D69-846C-DFDCCFF9E5F}", "D89C798C_4823-4D69-846C-DFDCCFF9E5F3", "{X89C798C-4823-4D69-846C-DFDCCFF9E5F3}"} {
		if _, err := ParseGUID(bad); err == nil {
			t.Errorf("ParseGUID(%q) accepted", bad)
		}
	}
	if IIDIND2MemoryWindow != IIDINDMemoryWindow {
		t.Fatal("the two memory window interfaces share their identifier")
	}
}

// mingw is the C compiler for Windows the C checks need: on CI it must be
// there (.ci/run installs it), elsewhere its absence skips them.
func mingw(t *testing.T) string {
	if runtime.GOOS == "windows" {
		t.Skip("the C layout checks run where the Windows binaries are built (mingw-w64 on Linux)")
	}
	cc, err := exec.LookPath("x86_64-w64-mingw32-gcc")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("x86_64-w64-mingw32-gcc is missing (gcc-mingw-w64-x86-64); CI must run the C layout checks")
		}
		t.Skip("no x86_64-w64-mingw32-gcc: the C layout checks need it")
	}
	return cc
}

// TestCLayout compiles ndabi.h with a C compiler for 64-bit Windows and
// checks, at compile time, every offset and size of the structures, every
// vtable slot of every interface, and every interface identifier against
// the Go declarations.
func TestCLayout(t *testing.T) {
	cc := mingw(t)
	var b bytes.Buffer
	b.WriteString("#include \"ndabi.h\"\n#include <stddef.h>\n")
	b.WriteString("extern void ndabi_guid_mismatch(void) __attribute__((error(\"an interface identifier differs from package ndabi's\")));\n")
	for _, s := range cStructs {
		typ := reflect.TypeOf(s.goes)
		fmt.Fprintf(&b, "_Static_assert(sizeof(%s) == %d, \"size of %s\");\n", s.c, typ.Size(), s.c)
		for i := range typ.NumField() {
			f := typ.Field(i)
			if f.Name == "_" {
				continue
			}
			name := f.Name
			if tag, ok := f.Tag.Lookup("c"); ok {
				name = tag
			}
			fmt.Fprintf(&b, "_Static_assert(offsetof(%s, %s) == %d && sizeof(((%s*)0)->%s) == %d, \"%s.%s\");\n",
				s.c, name, f.Offset, s.c, name, f.Type.Size(), s.c, name)
		}
	}
	fmt.Fprintf(&b, "_Static_assert(offsetof(SOCKET_ADDRESS_LIST, Address) == %d, \"SOCKET_ADDRESS_LIST.Address\");\n", addressListEntries)
	fmt.Fprintf(&b, "_Static_assert(sizeof(ND_MW_DESCRIPTOR) == %d, \"ND_MW_DESCRIPTOR\");\n", MWDescriptorSize)
	fmt.Fprintf(&b, "_Static_assert(sizeof(struct sockaddr_in) == %d && sizeof(struct sockaddr_in6) == %d, \"sockaddr sizes\");\n", SizeofSockaddrIn, SizeofSockaddrIn6)
	b.WriteString("void ndabi_check_guids(void) {\n")
	for _, in := range Interfaces {
		fmt.Fprintf(&b, "_Static_assert(sizeof(%sVtbl) == %d * sizeof(void*), \"%s's table\");\n", in.Name, len(in.Methods), in.Name)
		for i, m := range in.Methods {
			fmt.Fprintf(&b, "_Static_assert(offsetof(%sVtbl, %s) == %d * sizeof(void*), \"%s::%s\");\n", in.Name, m, i, in.Name, m)
		}
		g := in.IID
		fmt.Fprintf(&b, "if (IID_%s.Data1 != 0x%08x || IID_%s.Data2 != 0x%04x || IID_%s.Data3 != 0x%04x", in.Name, g.Data1, in.Name, g.Data2, in.Name, g.Data3)
		for i, d := range g.Data4 {
			fmt.Fprintf(&b, " || IID_%s.Data4[%d] != 0x%02x", in.Name, i, d)
		}
		b.WriteString(") ndabi_guid_mismatch();\n")
	}
	b.WriteString("}\n")
	dir := t.TempDir()
	src := filepath.Join(dir, "check.c")
	if err := os.WriteFile(src, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	wd, _ := os.Getwd()
	out, err := exec.Command(cc, "-std=c11", "-O2", "-Wall", "-Werror", "-I", wd, "-c", "-o", filepath.Join(dir, "check.o"), src).CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", cc, err, out)
	}
}
