package winipc

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"testing"
	"time"

	"golang.org/x/sys/windows"
)

func pipeName(t *testing.T) string {
	var b [8]byte
	rand.Read(b[:])
	return fmt.Sprintf("godirect-winipc-test-%x", b)
}

// TestPipe: a name has one listener; messages keep their bounds both ways;
// each end knows the other's process; a closed end reads as io.EOF at the
// peer; deadlines and short buffers are reported; a name nobody serves
// refuses.
func TestPipe(t *testing.T) {
	name := pipeName(t)
	ln, err := Listen(name)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	if _, err := Listen(name); !errors.Is(err, ErrNameInUse) {
		t.Fatalf("second Listen = %v, want ErrNameInUse", err)
	}
	type accepted struct {
		c   *Conn
		err error
	}
	ch := make(chan accepted, 1)
	go func() {
		c, err := ln.Accept()
		ch <- accepted{c, err}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cl, err := Dial(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	a := <-ch
	if a.err != nil {
		t.Fatal(a.err)
	}
	sv := a.c
	defer sv.Close()
	if cl.PeerPID() != uint32(os.Getpid()) || sv.PeerPID() != uint32(os.Getpid()) {
		t.Fatalf("peer pids %d, %d; want %d", cl.PeerPID(), sv.PeerPID(), os.Getpid())
	}
	for _, m := range []string{"a", "hello", string(make([]byte, 3000))} {
		if err := cl.WriteMessage([]byte(m)); err != nil {
			t.Fatal(err)
		}
	}
	if err := cl.WriteMessage([]byte("second")); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 4096)
	for _, want := range []string{"a", "hello", string(make([]byte, 3000)), "second"} {
		got, err := sv.ReadMessage(buf)
		if err != nil || string(got) != want {
			t.Fatalf("ReadMessage = %d bytes %q, %v; want %d bytes", len(got), got[:min(len(got), 8)], err, len(want))
		}
	}
	if err := sv.WriteMessage([]byte("reply")); err != nil {
		t.Fatal(err)
	}
	if got, err := cl.ReadMessage(buf); err != nil || string(got) != "reply" {
		t.Fatalf("client ReadMessage = %q, %v", got, err)
	}
	if err := sv.WriteMessage([]byte("too long for four")); err != nil {
		t.Fatal(err)
	}
	if _, err := cl.ReadMessage(buf[:4]); !errors.Is(err, ErrMessageTooLong) {
		t.Fatalf("short buffer: %v, want ErrMessageTooLong", err)
	}
	if err := cl.WriteMessage(nil); err == nil {
		t.Fatal("an empty message was written")
	}
	sv.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
	if _, err := sv.ReadMessage(buf); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("read past the deadline: %v", err)
	}
	sv.SetReadDeadline(time.Time{})
	cl.Close()
	if _, err := sv.ReadMessage(buf); err != io.EOF {
		t.Fatalf("read after the peer closed: %v, want io.EOF", err)
	}
	if _, err := Dial(ctx, pipeName(t)); !errors.Is(err, ErrNoListener) {
		t.Fatalf("Dial of an unserved name: %v, want ErrNoListener", err)
	}
}

// TestListenerClose: Close ends a waiting Accept and frees the name.
func TestListenerClose(t *testing.T) {
	name := pipeName(t)
	ln, err := Listen(name)
	if err != nil {
		t.Fatal(err)
	}
	ch := make(chan error, 1)
	go func() {
		_, err := ln.Accept()
		ch <- err
	}()
	ln.Close()
	if err := <-ch; !errors.Is(err, ErrListenerClosed) {
		t.Fatalf("Accept after Close = %v", err)
	}
	ln2, err := Listen(name)
	if err != nil {
		t.Fatalf("Listen after Close: %v", err)
	}
	ln2.Close()
}

// TestDialAfterListenerClosed: a connection the listener accepted keeps
// the pipe's name after the listener closed, but a Dial of the name is
// refused at once (ErrNoListener) rather than waiting for a free instance;
// the accepted connection still carries messages.
func TestDialAfterListenerClosed(t *testing.T) {
	name := pipeName(t)
	ln, err := Listen(name)
	if err != nil {
		t.Fatal(err)
	}
	ch := make(chan *Conn, 1)
	go func() {
		c, _ := ln.Accept()
		ch <- c
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	client, err := Dial(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	server := <-ch
	if server == nil {
		t.Fatal("Accept failed")
	}
	defer server.Close()
	ln.Close()
	if c, err := Dial(ctx, name); !errors.Is(err, ErrNoListener) {
		if c != nil {
			c.Close()
		}
		t.Fatalf("Dial after the listener closed = %v, want ErrNoListener", err)
	}
	if err := client.WriteMessage([]byte("still")); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 16)
	if m, err := server.ReadMessage(buf); err != nil || string(m) != "still" {
		t.Fatalf("ReadMessage = %q, %v", m, err)
	}
}

// TestProcessSelf: copies against a process's memory move exact bytes and
// fail without harm outside its mappings; handle values that name nothing
// are refused; a section is refused under a size it does not have, or
// from a handle of another kind.
func TestProcessSelf(t *testing.T) {
	p, err := OpenProcess(uint32(os.Getpid()))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if !p.CanAccessMemory() {
		t.Fatal("no memory rights on this very process")
	}
	src := []byte("0123456789abcdef")
	dst := make([]byte, 16)
	if err := p.Read(AddrOf(src), dst); err != nil || string(dst) != string(src) {
		t.Fatalf("Read = %q, %v", dst, err)
	}
	if err := p.Write(AddrOf(dst[4:]), []byte("WXYZ")); err != nil || string(dst) != "0123WXYZ89abcdef" {
		t.Fatalf("Write: %q, %v", dst, err)
	}
	if err := p.Probe(AddrOf(src), src); err != nil {
		t.Fatalf("Probe of matching bytes: %v", err)
	}
	if err := p.Probe(AddrOf(dst), src); err == nil {
		t.Fatal("Probe of other bytes succeeded")
	}
	if err := p.Read(16, dst); err == nil {
		t.Fatal("Read at address 16 succeeded")
	}
	if err := p.Write(16, dst); err == nil {
		t.Fatal("Write at address 16 succeeded")
	}
	if _, err := p.TakeHandle(0); err == nil {
		t.Fatal("TakeHandle(0) succeeded")
	}
	if _, err := p.TakeHandle(0x7ffffff0); err == nil {
		t.Fatal("TakeHandle of a value naming nothing succeeded")
	}
	s, err := NewSection(1 << 16)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Unmap()
	if _, err := SectionFrom(p, uint64(s.Handle()), 1<<17); !errors.Is(err, ErrNotSection) {
		t.Fatalf("SectionFrom larger than the section: %v", err)
	}
	ev, err := windows.CreateEvent(nil, 0, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer windows.CloseHandle(ev)
	if _, err := SectionFrom(p, uint64(ev), 4096); !errors.Is(err, ErrNotSection) {
		t.Fatalf("SectionFrom of an event: %v", err)
	}
	s2, err := SectionFrom(p, uint64(s.Handle()), 1<<16)
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Unmap()
	copy(s.Bytes()[100:], "shared")
	if string(s2.Bytes()[100:106]) != "shared" {
		t.Fatalf("second view reads %q", s2.Bytes()[100:106])
	}
}

// The child of TestTwoProcesses: it dials the pipe in GODIRECT_WINIPC_PIPE,
// maps the parent's section, reads the parent's probe bytes, writes into
// the parent's buffer and section, and exits.
func TestMain(m *testing.M) {
	if name := os.Getenv("GODIRECT_WINIPC_PIPE"); name != "" {
		if err := child(name); err != nil {
			fmt.Fprintln(os.Stderr, "child:", err)
			os.Exit(2)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// The parent's message: section handle, section size, probe address,
// target address, then the 16 probe bytes.
func child(name string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := Dial(ctx, name)
	if err != nil {
		return err
	}
	defer c.Close()
	buf := make([]byte, 256)
	msg, err := c.ReadMessage(buf)
	if err != nil || len(msg) != 48 {
		return fmt.Errorf("setup message: %d bytes, %v", len(msg), err)
	}
	p, err := OpenProcess(c.PeerPID())
	if err != nil {
		return err
	}
	defer p.Close()
	le := binary.LittleEndian
	s, err := SectionFrom(p, le.Uint64(msg), int(le.Uint64(msg[8:])))
	if err != nil {
		return err
	}
	defer s.Unmap()
	if err := p.Probe(le.Uint64(msg[16:]), msg[32:48]); err != nil {
		return err
	}
	if got := string(s.Bytes()[:6]); got != "parent" {
		return fmt.Errorf("section holds %q", got)
	}
	copy(s.Bytes()[6:], "child")
	if err := p.Write(le.Uint64(msg[24:]), []byte("written by the child")); err != nil {
		return err
	}
	return c.WriteMessage([]byte("done"))
}

// TestTwoProcesses: a second process reaches this one through a pipe,
// knows it from the kernel, maps its section, proves its handle by the
// probe, and writes into its memory; its end is seen by the pipe (io.EOF)
// and by waiting on its process.
func TestTwoProcesses(t *testing.T) {
	name := pipeName(t)
	ln, err := Listen(name)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "GODIRECT_WINIPC_PIPE="+name)
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if c.PeerPID() != uint32(cmd.Process.Pid) {
		t.Fatalf("peer pid %d, child is %d", c.PeerPID(), cmd.Process.Pid)
	}
	s, err := NewSection(1 << 16)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Unmap()
	copy(s.Bytes(), "parent")
	var probe [16]byte
	rand.Read(probe[:])
	target := make([]byte, 20)
	le := binary.LittleEndian
	msg := le.AppendUint64(nil, uint64(s.Handle()))
	msg = le.AppendUint64(msg, 1<<16)
	msg = le.AppendUint64(msg, AddrOf(probe[:]))
	msg = le.AppendUint64(msg, AddrOf(target))
	msg = append(msg, probe[:]...)
	if err := c.WriteMessage(msg); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 64)
	if got, err := c.ReadMessage(buf); err != nil || string(got) != "done" {
		t.Fatalf("child said %q, %v", got, err)
	}
	if string(target) != "written by the child" || string(s.Bytes()[:11]) != "parentchild" {
		t.Fatalf("target %q, section %q", target, s.Bytes()[:11])
	}
	p, err := OpenProcess(c.PeerPID())
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if _, err := c.ReadMessage(buf); err != io.EOF {
		t.Fatalf("read after the child ended: %v, want io.EOF", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := p.Wait(ctx); err != nil || !p.Exited() {
		t.Fatalf("Wait = %v, exited %v", err, p.Exited())
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("child: %v", err)
	}
}
