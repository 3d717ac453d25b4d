package main

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/godirect/nd/mesh"
)

// exchange runs p ranks of mode in this process, as a job of goroutines
// (mesh.InProcess), and returns each rank's durations. In mode nd the
// even ranks are on one named host and the odd ones on another, so that
// both shm and tcp carry the exchange; in mode go rank i listens on
// 127.0.0.(i+1).
func exchange(t *testing.T, mode string, p, m, reps int) [][]time.Duration {
	t.Helper()
	results, err := runRanks(t, mode, p, m, reps, nil)
	if err != nil {
		t.Fatal(err)
	}
	times := make([][]time.Duration, p)
	for i, res := range results {
		times[i] = res.times
	}
	return times
}

// runRanks runs the ranks, rank tamperer with params.tamper set to tamper.
func runRanks(t *testing.T, mode string, p, m, reps int, tamper func(to, k int, send []byte)) ([]result, error) {
	t.Helper()
	const tamperer = 1
	if runtime.GOOS != "linux" {
		t.Skip("needs 127.0.0.2 and up on the loopback interface (Linux)")
	}
	jobs := mesh.InProcess(p)
	ranks := make([]rank, p)
	for i := range p {
		prm := params{Rank: i, P: p, M: m, Reps: reps, Spin: 20 * time.Microsecond}
		if i == tamperer {
			prm.tamper = tamper
		}
		cfg := mesh.Config{Host: fmt.Sprint("host", i%2), RemoteAddr: netip.AddrFrom4([4]byte{127, 0, 0, 1})}
		r, err := newRank(mode, prm, cfg, netip.AddrPortFrom(netip.AddrFrom4([4]byte{127, 0, 0, byte(i + 1)}), 0))
		if err != nil {
			t.Fatalf("rank %d: %v", i, err)
		}
		t.Cleanup(func() { r.Close() })
		ranks[i] = r
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	results := make([]result, p)
	errs := make([]error, p)
	var wg sync.WaitGroup
	for i, r := range ranks {
		wg.Go(func() {
			results[i], errs[i] = r.Run(ctx, jobs[i])
			if errs[i] != nil {
				cancel() // the others would wait for this rank until the deadline
			}
		})
	}
	wg.Wait()
	return results, errors.Join(errs...)
}

// TestExchange: every rank of every mode completes every exchange with
// every byte it received checked, and reports a duration for each.
func TestExchange(t *testing.T) {
	for _, mode := range []string{"nd", "nd-sends", "go"} {
		for _, m := range []int{8, 65536} {
			t.Run(fmt.Sprintf("%s/M=%d", mode, m), func(t *testing.T) {
				const p, reps = 4, 3
				times := exchange(t, mode, p, m, reps)
				for i, ts := range times {
					if len(ts) != reps {
						t.Fatalf("rank %d: %d durations, want %d", i, len(ts), reps)
					}
					for _, d := range ts {
						if d <= 0 {
							t.Fatalf("rank %d: durations %v", i, ts)
						}
					}
				}
			})
		}
	}
}

// TestSilentSends: in mode nd an exchange's Send to a peer that the next
// barrier, not the last, sends a control message is silent, and the
// buffer it frees is reused two exchanges later (the run ends only if
// every such Send was taken as complete); mode nd-sends posts none silent.
func TestSilentSends(t *testing.T) {
	const reps = 6
	for _, tc := range []struct {
		mode string
		p    int
		// want is each rank's silent Sends: exchanges 0..reps-2, times
		// the peers its barrier sends to (the stages 2^j < P).
		want int
	}{{"nd", 2, (reps - 1) * 1}, {"nd", 4, (reps - 1) * 2}, {"nd", 5, (reps - 1) * 3}, {"nd-sends", 4, 0}} {
		t.Run(fmt.Sprintf("%s/P=%d", tc.mode, tc.p), func(t *testing.T) {
			results, err := runRanks(t, tc.mode, tc.p, 16, reps, nil)
			if err != nil {
				t.Fatal(err)
			}
			for i, res := range results {
				if res.silentSends != tc.want {
					t.Errorf("rank %d: %d silent Sends, want %d", i, res.silentSends, tc.want)
				}
			}
		})
	}
}

// TestExchangeOddRanks: the barrier's stages with P not a power of two,
// over more rounds than the control Receives' two slots.
func TestExchangeOddRanks(t *testing.T) {
	for _, p := range []int{3, 5} {
		t.Run(fmt.Sprint(p), func(t *testing.T) { exchange(t, "nd", p, 24, 6) })
	}
}

// TestExchangeTwoRanks: the smallest run, an odd message size.
func TestExchangeTwoRanks(t *testing.T) {
	for _, mode := range []string{"nd", "nd-sends", "go"} {
		t.Run(mode, func(t *testing.T) { exchange(t, mode, 2, 13, 2) })
	}
}

// TestExchangeCatchesCorruption: one byte changed in what rank 1 sends to
// rank 2 in exchange 1 fails the run, naming it.
func TestExchangeCatchesCorruption(t *testing.T) {
	for _, mode := range []string{"nd", "go"} {
		t.Run(mode, func(t *testing.T) {
			_, err := runRanks(t, mode, 3, 64, 3, func(to, k int, send []byte) {
				if to == 2 && k == 1 {
					send[37] ^= 0x10
				}
			})
			if !errors.Is(err, errCorrupt) || !strings.Contains(err.Error(), "from rank 1 to rank 2, exchange 1, offset 37:") {
				t.Fatalf("got %v, want the corruption at offset 37 of exchange 1 from rank 1 to rank 2", err)
			}
		})
	}
}

// TestPattern: the check passes on the bytes that were sent and names the
// first byte that differs otherwise.
func TestPattern(t *testing.T) {
	for _, n := range []int{1, 8, 13, 4096} {
		buf := make([]byte, n)
		fillPattern(buf, 3, 5, 7, false)
		if err := checkPattern(buf, 3, 5, 7); err != nil {
			t.Fatalf("%d bytes: %v", n, err)
		}
		for _, other := range [][3]int{{5, 3, 7}, {3, 5, 8}, {4, 5, 7}} {
			if err := checkPattern(buf, other[0], other[1], other[2]); !errors.Is(err, errCorrupt) {
				t.Fatalf("%d bytes of (3, 5, 7) checked as %v: %v", n, other, err)
			}
		}
		fillPattern(buf, 3, 5, 7, true)
		for i := range buf {
			buf[i] = ^buf[i]
		}
		if err := checkPattern(buf, 3, 5, 7); err != nil {
			t.Fatalf("%d bytes, complement of the complement: %v", n, err)
		}
		buf[n-1]++
		err := checkPattern(buf, 3, 5, 7)
		if !errors.Is(err, errCorrupt) || !strings.Contains(err.Error(), fmt.Sprintf("offset %d:", n-1)) {
			t.Fatalf("%d bytes, last one changed: %v", n, err)
		}
	}
	// Every byte of a complemented buffer fails.
	buf := make([]byte, 64)
	fillPattern(buf, 1, 2, 3, true)
	for i := range buf {
		if err := checkPattern(buf[i:i+1], 1, 2, 3); i%8 == 0 && err == nil {
			t.Fatalf("byte %d of the complement passes", i)
		}
	}
}

// TestFormatLine: the line bench/alltoall.sh parses.
func TestFormatLine(t *testing.T) {
	got := formatLine("nd", params{Rank: 2, P: 4, M: 8}, []time.Duration{30, 10, 20}, 1500)
	want := "alltoall mode=nd p=4 m=8 rank=2 reps=3 median_ns=20 wireup_ns=1500 ns=30,10,20"
	if got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
}
