package tcp

import (
	"bytes"
	"errors"
	"io"
	"testing"
)

// scriptedReader returns data in the chunk sizes of script (0: one
// errAgain), then the rest in one read, then io.EOF.
type scriptedReader struct {
	data   []byte
	script []int
	reads  int
}

func (r *scriptedReader) Read(p []byte) (int, error) {
	r.reads++
	if len(r.data) == 0 {
		return 0, io.EOF
	}
	n := len(r.data)
	if len(r.script) > 0 {
		n = r.script[0]
		r.script = r.script[1:]
		if n == 0 {
			return 0, errAgain
		}
	}
	n = copy(p, r.data[:min(n, len(r.data))])
	r.data = r.data[n:]
	return n, nil
}

// twoScriptedReader is a scriptedReader that also reads each chunk into
// two places (a twoReader, as the socket is).
type twoScriptedReader struct{ *scriptedReader }

func (r twoScriptedReader) readTwo(p, q []byte) (int, error) {
	both := make([]byte, len(p)+len(q))
	n, err := r.Read(both)
	copy(q, both[copy(p, both[:n]):n])
	return n, err
}

func stream(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*7 + i>>8)
	}
	return b
}

// TestRxBufferPeekAgainNotSticky: a peek that meets errAgain returns it
// once; the next peek reads on and returns the bytes.
func TestRxBufferPeekAgainNotSticky(t *testing.T) {
	data := stream(100)
	b := newRxBuffer(&scriptedReader{data: data, script: []int{3, 0, 50}}, 64)
	got, err := b.Peek(10)
	if !errors.Is(err, errAgain) || !bytes.Equal(got, data[:3]) {
		t.Fatalf("Peek(10) = %v, %v; want the 3 bytes there and errAgain", got, err)
	}
	got, err = b.Peek(10)
	if err != nil || !bytes.Equal(got, data[:10]) {
		t.Fatalf("second Peek(10) = %v, %v; want the first 10 bytes", got, err)
	}
	if b.Buffered() != 53 {
		t.Fatalf("Buffered() = %d, want 53", b.Buffered())
	}
	if _, err := b.Peek(65); !errors.Is(err, errBufferFull) {
		t.Fatalf("Peek(65) of a 64-byte buffer: %v, want errBufferFull", err)
	}
}

// TestRxBufferReadDirect: with nothing buffered, a read as long as the
// buffer goes straight into the caller's slice; a shorter one through the
// buffer.
func TestRxBufferReadDirect(t *testing.T) {
	data := stream(300)
	src := &scriptedReader{data: data, script: []int{100, 100}}
	b := newRxBuffer(src, 64)
	p := make([]byte, 64)
	if n, err := b.Read(p); n != 64 || err != nil || !bytes.Equal(p, data[:64]) {
		t.Fatalf("Read(64 bytes) = %d, %v", n, err)
	}
	if b.Buffered() != 0 {
		t.Fatalf("a direct read left %d bytes buffered", b.Buffered())
	}
	// A shorter read fills the buffer (64 of the source's next 100
	// bytes) and takes its part.
	q := make([]byte, 10)
	if n, err := b.Read(q); n != 10 || err != nil || !bytes.Equal(q, data[64:74]) {
		t.Fatalf("Read(10 bytes) = %d, %v, %v", n, err, q)
	}
	if b.Buffered() != 54 {
		t.Fatalf("Buffered() = %d after a short read through the buffer, want 54", b.Buffered())
	}
}

// TestRxBufferPlace: while place is set, with nothing buffered, a read of
// at least placeMin bytes from a twoReader takes its bytes straight into
// the caller's slice and what follows them into the buffer's first
// placeSpill bytes, in one call; a fill takes at most placeSpill bytes.
func TestRxBufferPlace(t *testing.T) {
	data := stream(400)
	src := &scriptedReader{data: data, script: []int{100, 30, 100}}
	b := newRxBuffer(twoScriptedReader{src}, 256)
	b.place, b.placeMin, b.placeSpill = true, 40, 20
	p := make([]byte, 64)
	if n, err := b.Read(p); n != 64 || err != nil || !bytes.Equal(p, data[:64]) {
		t.Fatalf("Read(64 bytes) = %d, %v", n, err)
	}
	if src.reads != 1 || b.Buffered() != 20 {
		t.Fatalf("after a read of 64 bytes from a 100-byte chunk: %d reads, %d bytes buffered; want 1 and 20 (the spill)", src.reads, b.Buffered())
	}
	got, err := b.Peek(20)
	if err != nil || !bytes.Equal(got, data[64:84]) {
		t.Fatalf("Peek(20) = %v, %v; want the 20 bytes after the read", got, err)
	}
	b.Read(got) // consume them
	// A chunk shorter than the read: all of it goes into the slice.
	q := make([]byte, 80)
	if n, err := b.Read(q); n != 30 || err != nil || !bytes.Equal(q[:30], data[84:114]) || b.Buffered() != 0 {
		t.Fatalf("Read(80 bytes) of a 30-byte chunk = %d, %v, %d buffered", n, err, b.Buffered())
	}
	// A peek fills at most placeSpill bytes, of a 100-byte chunk.
	if got, err := b.Peek(4); err != nil || !bytes.Equal(got, data[114:118]) || b.Buffered() != 20 {
		t.Fatalf("Peek(4) = %v, %v with %d bytes buffered; want 20 buffered", got, err, b.Buffered())
	}
	// Without place, a read shorter than the buffer goes through it (the
	// rest of the stream, 266 bytes: as much as the buffer holds).
	b.place = false
	b.Read(make([]byte, 20))
	if n, _ := b.Read(make([]byte, 50)); n != 50 || b.Buffered() != 206 {
		t.Fatalf("Read(50) without place: %d bytes, %d buffered; want 50 and 206", n, b.Buffered())
	}
}

// TestRxBufferGrowKeepsBytes: growing keeps what is buffered, in order,
// and later fills use the whole new size.
func TestRxBufferGrowKeepsBytes(t *testing.T) {
	data := stream(5000)
	src := &scriptedReader{data: data, script: []int{40}}
	b := newRxBuffer(src, 64)
	if _, err := b.Peek(30); err != nil {
		t.Fatal(err)
	}
	p := make([]byte, 5)
	b.Read(p)
	b.grow(1024)
	if b.Size() != 1024 || b.Buffered() != 35 {
		t.Fatalf("after grow: size %d, buffered %d; want 1024, 35", b.Size(), b.Buffered())
	}
	got, err := b.Peek(1000)
	if err != nil || !bytes.Equal(got, data[5:1005]) {
		t.Fatalf("Peek(1000) after grow: %v", err)
	}
	b.grow(512) // never shrinks
	if b.Size() != 1024 {
		t.Fatalf("grow(512) shrank the buffer to %d", b.Size())
	}
	rest, err := io.ReadAll(b)
	if err != nil || !bytes.Equal(rest, data[5:]) {
		t.Fatalf("the rest of the stream: %d bytes, %v; want %d bytes", len(rest), err, len(data)-5)
	}
}

// FuzzRxBuffer: any mix of peeks, reads and growth over a stream read in
// any chunks gives back the stream, in order, byte for byte, from a
// source that reads into one place and from one that reads into two (and
// places long reads).
func FuzzRxBuffer(f *testing.F) {
	f.Add([]byte{3, 0, 70, 1, 200, 0, 9}, []byte{0x05, 0x47, 0x80, 0x23, 0xc1, 0x10})
	f.Add([]byte{}, []byte{0x80, 0x80, 0x40})
	f.Fuzz(func(t *testing.T, chunks, ops []byte) {
		for _, two := range []bool{false, true} {
			fuzzRxBuffer(t, chunks, ops, two)
		}
	})
}

func fuzzRxBuffer(t *testing.T, chunks, ops []byte, two bool) {
	data := stream(4000)
	script := make([]int, len(chunks))
	for i, c := range chunks {
		script[i] = int(c)
	}
	var src io.Reader = &scriptedReader{data: data, script: script}
	if two {
		src = twoScriptedReader{src.(*scriptedReader)}
	}
	b := newRxBuffer(src, 64)
	b.place, b.placeMin, b.placeSpill = two, 48, 24
	var out []byte
	pos := 0
	for _, op := range ops {
		n := int(op & 0x3f)
		switch op >> 6 {
		case 0: // peek
			got, err := b.Peek(n)
			if n <= b.Size() && err == nil && len(got) != n {
				t.Fatalf("Peek(%d) returned %d bytes and no error", n, len(got))
			}
			if !bytes.Equal(got, data[pos:pos+len(got)]) {
				t.Fatalf("Peek(%d) at %d returned other bytes than the stream's", n, pos)
			}
		case 1, 2: // read
			p := make([]byte, n*int(op>>6)*2)
			k, err := b.Read(p)
			if err != nil && !errors.Is(err, errAgain) && err != io.EOF {
				t.Fatalf("Read: %v", err)
			}
			out = append(out, p[:k]...)
			pos += k
		case 3: // grow
			b.grow(64 + n*64)
		}
	}
	for {
		p := make([]byte, 100)
		k, err := b.Read(p)
		out = append(out, p[:k]...)
		if err == io.EOF {
			break
		}
		if err != nil && !errors.Is(err, errAgain) {
			t.Fatalf("Read: %v", err)
		}
	}
	if !bytes.Equal(out, data) {
		t.Fatalf("read back %d bytes that differ from the %d-byte stream (two places: %v)", len(out), len(data), two)
	}
}

// recordingReader notes, for each read of the source, whether the slice it
// was given (either slice of a readTwo) holds the byte at mark.
type recordingReader struct {
	*scriptedReader
	mark    *byte
	dst     []byte // the payload's place
	touched int    // reads given a slice that holds mark
	intoDst int    // reads given a slice of dst
}

func (r *recordingReader) note(p []byte) {
	for i := range r.dst {
		if len(p) > 0 && &p[0] == &r.dst[i] {
			r.intoDst++
			break
		}
	}
	for i := range p {
		if &p[i] == r.mark {
			r.touched++
			return
		}
	}
}

func (r *recordingReader) Read(p []byte) (int, error) {
	r.note(p)
	return r.scriptedReader.Read(p)
}

func (r *recordingReader) readTwo(p, q []byte) (int, error) {
	r.note(p)
	r.note(q)
	return twoScriptedReader{r.scriptedReader}.readTwo(p, q)
}

// readsOnly hides readTwo: a source that reads into one place.
type readsOnly struct{ io.Reader }

// TestRxBufferReadEndPlacesLastByte: reading a payload as the reader does
// (Read, then ReadEnd for the chunk that ends it), no read of the source
// is given the payload's last byte to store, whether the reads go straight
// into place (place mode, or reads as long as the buffer) or through the
// buffer; the bytes arrive whole and in order, and the reads of the source
// are no more than Read alone takes, as many of them straight into place.
func TestRxBufferReadEndPlacesLastByte(t *testing.T) {
	for _, tc := range []struct {
		name  string
		place bool
		two   bool
		size  int
	}{
		{"InPlace", true, true, 300},
		{"LongerThanBuffer", false, false, 600},
		{"AsLongAsBuffer", false, false, 256},
		{"ThroughBuffer", false, false, 100},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data := stream(tc.size + 40) // the payload, then its trailer and more
			reads := func(end bool) (got []byte, touched, srcReads, intoDst int) {
				dst := make([]byte, tc.size)
				src := &recordingReader{scriptedReader: &scriptedReader{data: data, script: []int{50, 0, 400}}, mark: &dst[tc.size-1], dst: dst}
				var r io.Reader = readsOnly{src}
				if tc.two {
					r = src
				}
				b := newRxBuffer(r, 256)
				b.place, b.placeMin, b.placeSpill = tc.place, 40, 64
				for off := 0; off < tc.size; {
					read := b.Read
					if end {
						read = b.ReadEnd
					}
					n, err := read(dst[off:])
					off += n
					if err != nil && !errors.Is(err, errAgain) {
						t.Fatalf("read at %d: %v", off, err)
					}
				}
				if _, err := b.Peek(40); err != nil {
					t.Fatalf("Peek of what follows: %v", err)
				}
				return dst, src.touched, src.reads, src.intoDst
			}
			got, touched, withEnd, directEnd := reads(true)
			if !bytes.Equal(got, data[:tc.size]) {
				t.Fatalf("the payload arrived as %x, want %x", got, data[:tc.size])
			}
			if touched != 0 {
				t.Errorf("%d reads of the source were given the payload's last byte to store", touched)
			}
			_, _, plain, direct := reads(false)
			if withEnd > plain || directEnd != direct {
				t.Errorf("reads of the source (straight into place): %d (%d) with ReadEnd, %d (%d) with Read alone", withEnd, directEnd, plain, direct)
			}
		})
	}
}
