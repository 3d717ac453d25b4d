package ndtools

import (
	"testing"

	"github.com/godirect/nd"
	"github.com/godirect/nd/cmd/nd/internal/datapath"
	"github.com/godirect/nd/cmd/nd/internal/session"
)

func TestWire(t *testing.T) {
	h := session.Hello{MaxSize: 4 << 20, Count: 12345, Arg: rdmaOpRead}
	got, err := session.RdmapingGreeting.ParseHello(session.RdmapingGreeting.Hello(h))
	if err != nil || got != h {
		t.Errorf("hello round trip: %+v, %v; want %+v", got, err, h)
	}
	if _, err := session.PingGreeting.ParseHello(session.RdmapingGreeting.Hello(h)); err == nil {
		t.Error("nd ping took an nd rdmaping hello")
	}
	w := session.PingGreeting.Welcome([]byte{0, 0, 0, 127})
	if err := session.PingGreeting.CheckWelcome(w); err != nil || string(w[session.WelcomeSize:]) != "\x00\x00\x00\x7f" {
		t.Errorf("welcome %q: %v", w, err)
	}
	if err := session.PingpongGreeting.CheckWelcome(w); err == nil {
		t.Error("nd pingpong took an nd ping welcome")
	}
	m := datapath.WindowMsg{Desc: nd.MWDescriptor{Base: 1 << 40, Length: 4096, Token: 0xdeadbeef}, ReadLimit: 16}
	var b [datapath.WindowMsgSize]byte
	if got, err := datapath.ParseWindowMsg(m.Put(b[:])); err != nil || got != m {
		t.Errorf("window message round trip: %+v, %v; want %+v", got, err, m)
	}
	var r [pingReplySize]byte
	pingReply{credits: 64, syncs: 1}.put(r[:])
	if got, err := parsePingReply(r[:], len(r)); err != nil || got != (pingReply{64, 1}) {
		t.Errorf("reply round trip: %+v, %v", got, err)
	}
}
