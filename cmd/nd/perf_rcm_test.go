package main

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestPerfRCMLoopback runs nd perf -R's client against nd perf -R --server
// over tcp loopback for each test, both sides speaking perftest 6.06's
// rdma_cm protocol, and checks that both report every iteration.
func TestPerfRCMLoopback(t *testing.T) {
	for _, tc := range []struct {
		test        string
		size, iters int
		crc         bool
	}{
		{"send_bw", 4096, 300, false},
		{"send_bw", 100, 1100, false}, // rx_depth 512: Receives reposted, credits wrap
		{"send_bw", 64, 2, false},     // rx_depth 2: a credit per Receive
		{"write_bw", 65536, 50, false},
		{"write_bw", 1000, 200, true},
		{"read_bw", 65536, 50, false},
		{"read_bw", 3000, 200, true},
	} {
		name := fmt.Sprintf("%s-%dx%d-crc%v", tc.test, tc.size, tc.iters, tc.crc)
		t.Run(name, func(t *testing.T) {
			common := []string{"-R", "-n", fmt.Sprint(tc.iters), "-s", fmt.Sprint(tc.size), "-timeout", "60s"}
			if tc.crc {
				common = append(common, "-crc")
			}
			srvOut := newSyncBuffer()
			var srvErr bytes.Buffer
			srvDone := make(chan int, 1)
			go func() {
				srvDone <- run(append([]string{"perf", tc.test, "--server", "-p", "0"}, common...), srvOut, &srvErr)
			}()
			var addr string
			select {
			case <-srvOut.written:
				m := perfListeningRE.FindStringSubmatch(srvOut.String())
				if m == nil {
					t.Fatalf("the server's first output is %q", srvOut.String())
				}
				addr = m[1]
			case code := <-srvDone:
				t.Fatalf("the server exited %d before listening: %s", code, srvErr.String())
			case <-time.After(30 * time.Second):
				t.Fatal("the server did not listen")
			}
			code, out, errOut := runNd(t, append([]string{"perf", tc.test}, append(common, addr)...)...)
			if code != 0 {
				t.Fatalf("client exit %d: %s\n%s", code, errOut, out)
			}
			if code := <-srvDone; code != 0 {
				t.Fatalf("server exit %d: %s\n%s", code, srvErr.String(), srvOut.String())
			}
			for side, o := range map[string]string{"client": out, "server": srvOut.String()} {
				i := strings.Index(o, perfLine)
				if i < 0 {
					t.Fatalf("%s: no table in the output:\n%s", side, o)
				}
				tab := parsePerfTable(t, o[i:])
				if len(tab.rows) != 1 || tab.rows[0][0] != float64(tc.size) || tab.rows[0][1] != float64(tc.iters) {
					t.Errorf("%s: rows %v, want one of %d bytes x %d:\n%s", side, tab.rows, tc.size, tc.iters, o)
				}
			}
		})
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

// TestPerfRCMUsage checks the flags -R refuses, each with its own message.
func TestPerfRCMUsage(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"perf", "send_lat", "-R", "127.0.0.1"}, "-R supports send_bw, write_bw and read_bw, not send_lat"},
		{[]string{"perf", "send_bw", "-R", "-a", "127.0.0.1"}, "-R runs one size"},
		{[]string{"perf", "send_bw", "-R", "-q", "2", "127.0.0.1"}, "-R runs one connection"},
		{[]string{"perf", "write_bw", "-R"}, "-R needs --server or the server's ADDRESS"},
		{[]string{"perf", "read_bw", "--rdma_cm", "-D", "1", "127.0.0.1"}, "-R runs by iterations, not -D"},
	} {
		if code, _, stderr := runNd(t, tc.args...); code != 2 || !strings.Contains(stderr, tc.want) {
			t.Errorf("nd %s: exit %d, stderr %q; want 2 and %q", strings.Join(tc.args, " "), code, stderr, tc.want)
		}
	}
}
