package perftest

import (
	"testing"
	"time"

	"github.com/godirect/nd"
)

// TestRcmLatencyColumns checks the latency columns against a hand count:
// ten posts 10 us apart but for one gap of 100 us and one of 50 us.
func TestRcmLatencyColumns(t *testing.T) {
	gaps := []int64{10, 10, 100, 10, 10, 50, 10, 10, 10} // us between posts
	stamps := []int64{0}
	for _, g := range gaps {
		stamps = append(stamps, stamps[len(stamps)-1]+g*1000)
	}
	row := rcmIterationsRow(8, stamps, 2)
	l := row.lat
	// Sorted: 10 x7, 50, 100; the two slowest are left out, 7 remain;
	// halved for the round trip.
	want := perfLatRow{Bytes: 8, Iterations: 10, TMin: 5, TMax: 25, TTypical: 5, TAvg: 5, TStdev: 0, P99: 25, P999: 25}
	if l != want {
		t.Errorf("rcmIterationsRow = %+v, want %+v", l, want)
	}
	d := rcmDurationRow(8, 1000, 2*time.Millisecond, 1)
	if d.lat.TAvg != 2 || d.tps != 500000 || !d.byTime {
		t.Errorf("rcmDurationRow = %+v, want t_avg 2 us, 500000 per second", d)
	}
}

// TestRcmDestLayout checks pingpong_dest's two layouts.
func TestRcmDestLayout(t *testing.T) {
	d := rcmDest{lid: 1, outReads: 128, qpn: 2, psn: 0x265d4d, rkey: 0xabcd00, vaddr: 0x7fff12345678, srqn: 5, gidIndex: 3}
	d.gid[0], d.gid[15] = 0xfe, 0x01
	var b [rcmWideDestSize]byte
	narrow := d.put(b[:], false)
	if len(narrow) != rcmDestSize || narrow[7] != 128 || narrow[19] != 0x00 || narrow[18] != 0xcd || narrow[28] != 0x12 || narrow[32] != 0xfe || narrow[55] != 3 {
		t.Errorf("56-byte layout: % x", narrow)
	}
	if got := parseRcmDest(narrow, false); got != d {
		t.Errorf("56-byte round trip: %+v, want %+v", got, d)
	}
	wide := d.put(b[:], true)
	if len(wide) != rcmWideDestSize || wide[40] != 0xfe || wide[63] != 3 {
		t.Errorf("64-byte layout: % x", wide)
	}
	if got := parseRcmDest(wide, true); got != d {
		t.Errorf("64-byte round trip: %+v, want %+v", got, d)
	}
}

// deviceStub is an adapter of provider/verbs as rnrDevice sees it.
type deviceStub struct {
	nd.Adapter
	iwarp bool
}

func (d deviceStub) Device() (string, bool) { return "dev0", d.iwarp }

// TestRcmCreditsOnIWARPOnly: perftest's send_bw writes credits on iWARP
// devices only; on RoCE and InfiniBand its client's Sends wait for the
// server's Receives (RNR retry), and nd perf -R must do the same in both
// roles, or it writes into a credit word perftest never offered.
func TestRcmCreditsOnIWARPOnly(t *testing.T) {
	cases := []struct {
		name    string
		a       nd.Adapter
		test    string
		credits bool
	}{
		{"no device (tcp, shm, loop)", nil, "send_bw", true},
		{"iWARP", deviceStub{iwarp: true}, "send_bw", true},
		{"RoCE", deviceStub{iwarp: false}, "send_bw", false},
		{"iWARP send_lat", deviceStub{iwarp: true}, "send_lat", false},
		{"iWARP write_bw", deviceStub{iwarp: true}, "write_bw", false},
	}
	for _, c := range cases {
		for _, server := range []bool{false, true} {
			cfg := &Config{Test: TestNamed(c.test), Size: 64, Iters: 100, TxDepth: 16, CQMod: 1}
			s := cfg.newRcmSide(c.a, nd.AdapterInfo{}, server, 0)
			if s.credits != c.credits {
				t.Errorf("%s, server %v: credits = %v, want %v", c.name, server, s.credits, c.credits)
			}
		}
	}
}
