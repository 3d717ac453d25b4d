package ndnet

import (
	"testing"
	"time"

	"github.com/godirect/nd"
)

// TestDataFramesCompleteSilently: data frames are posted with silent
// success but for every len(tx)/4-th in a row, whose completion retires
// the silent ones before it; so the frames in flight never fill the
// outbound slots with frames that no completion will retire.
func TestDataFramesCompleteSilently(t *testing.T) {
	// A depth of 8: the connection's own credit frames, due once it
	// reposted half of it, stay out of the way.
	r := newRawPeer(t, Config{QueueDepth: 8, InlineThreshold: 64, BufferSize: 4096, Linger: time.Millisecond})
	c := r.conn
	c.SetWriteDeadline(time.Now().Add(5 * time.Second))
	run := len(c.tx) / 4 // silent frames before a signaled one
	if run < 2 {
		t.Fatalf("%d outbound slots: too few for the test", len(c.tx))
	}
	for k := 1; k <= 3*(run+1); k++ {
		if _, err := c.Write([]byte{byte(k)}); err != nil {
			t.Fatalf("Write %d: %v", k, err)
		}
		res := r.wait()
		i := 0
		for i < len(r.recv) && res != &r.recv[i] {
			i++
		}
		if i == len(r.recv) || res.Status != nd.Success {
			t.Fatalf("frame %d: completion %+v, want one of the Receives", k, res)
		}
		h, payload, err := parseFrame(r.buf[i*4096 : i*4096+int(res.BytesTransferred)])
		if err != nil || h.Type != frameData || len(payload) != 1 || payload[0] != byte(k) {
			t.Fatalf("frame %d: %+v %x %v, want data %x", k, h, payload, err, k)
		}
		if err := r.ep.Receive(res, []nd.SGE{{Buffer: r.buf[i*4096 : (i+1)*4096], Region: r.mr}}); err != nil {
			t.Fatal(err)
		}
		// The slot reposted: credit for the hello and the k frames.
		r.send(header{Type: frameCredit, SlotAck: uint32(1 + k)}, nil)
		// Over loop a Send completes before its post returns: what the
		// connection finds now is every completion it will get.
		c.mu.Lock()
		c.pollLocked()
		inFlight := c.txLen
		c.mu.Unlock()
		if want := k % (run + 1); inFlight != want {
			t.Fatalf("after data frame %d, %d outbound requests in flight, want %d (%d silent in a row, then a signaled one)", k, inFlight, want, run)
		}
	}
}
