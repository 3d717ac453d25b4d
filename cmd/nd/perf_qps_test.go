package main

import (
	"context"
	"encoding/json"
	"io"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/godirect/nd"

	"github.com/godirect/nd/cmd/nd/internal/perftest"
	"github.com/godirect/nd/cmd/nd/internal/session"
)

// perfDoc is nd perf's --json document, as the tests read it.
type perfDoc struct {
	Test       string               `json:"test"`
	Title      string               `json:"title"`
	Provider   string               `json:"provider"`
	Parameters perftest.Params      `json:"parameters"`
	Units      map[string]string    `json:"units"`
	Results    []map[string]float64 `json:"results"`
}

// checkPerfDoc parses out as nd perf's --json document of test over
// provider with qps connections and checks it: one row of size bytes and
// iters iterations, with figures that make sense.
func checkPerfDoc(t *testing.T, out, test, provider string, qps, size, iters int) {
	t.Helper()
	var doc perfDoc
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("--json: %v:\n%s", err, out)
	}
	p := doc.Parameters
	if doc.Test != test || doc.Title != perftest.TestNamed(test).Title || doc.Provider != provider || p.QPs != qps ||
		len(p.Sizes) != 1 || p.Sizes[0] != size || p.Client == "" || p.Server == "" || len(doc.Results) != 1 {
		t.Fatalf("--json: %+v, want test %s, provider %s, %d connections, one row of %d bytes", doc, test, provider, qps, size)
	}
	row := doc.Results[0]
	if int(row["bytes"]) != size || row["iterations"] != float64(iters) || row["client_cpu_usec_per_op"] < 0 {
		t.Errorf("row %v: want %d bytes, %d iterations", row, size, iters)
	}
	if strings.HasSuffix(test, "_lat") {
		if doc.Units["latency"] != "usec" || len(row) != 10 {
			t.Errorf("units %v, row %v: want latency in usec and 10 columns", doc.Units, row)
		}
		tmin, tmax, typical, avg := row["t_min_usec"], row["t_max_usec"], row["t_typical_usec"], row["t_avg_usec"]
		if !(tmin > 0 && tmin <= typical && typical <= tmax && tmin <= avg && avg <= tmax && row["t_stdev_usec"] >= 0 &&
			typical <= row["p99_usec"] && row["p99_usec"] <= row["p99_9_usec"] && row["p99_9_usec"] <= tmax) {
			t.Errorf("row %v: want 0 < t_min <= t_typical, t_avg <= t_max and t_typical <= 99%% <= 99.9%% <= t_max", row)
		}
		return
	}
	if doc.Units["bw"] != "MB/sec" || doc.Units["msg_rate"] != "Mpps" || len(row) != 6 {
		t.Errorf("units %v, row %v: want MB/sec, Mpps and 6 columns", doc.Units, row)
	}
	if !(row["bw_average"] > 0 && row["bw_peak"] >= row["bw_average"]*0.999 && row["msg_rate_mpps"] > 0) {
		t.Errorf("row %v: want bandwidths > 0, peak >= average, a message rate > 0", row)
	}
	// The message rate is the iterations over the time: both agree with
	// the average bandwidth.
	if mb := row["msg_rate_mpps"] * 1e6 * float64(size) / (1 << 20); mb < row["bw_average"]*0.99 || mb > row["bw_average"]*1.01 {
		t.Errorf("row %v: %v Mpps of %d bytes is %v MB/sec, not the average", row, row["msg_rate_mpps"], size, mb)
	}
}

// TestPerfQPs runs a latency test, a bandwidth test and the read tests
// with -q 3 over loop (in this process) and tcp (in this process, and with
// the server in a second process): every row counts -n iterations of each
// of the three connections.
func TestPerfQPs(t *testing.T) {
	const qps, n, size = 3, 25, 200
	for _, test := range []string{"send_lat", "write_lat", "read_lat", "send_bw", "read_bw"} {
		for _, where := range []string{"loop", "tcp --in-process", "tcp"} {
			t.Run(test+"/"+strings.ReplaceAll(where, " ", ""), func(t *testing.T) {
				args := append([]string{test, "--provider"}, strings.Fields(where)...)
				args = append(args, "-b", "--json", "-q", strconv.Itoa(qps), "-n", strconv.Itoa(n), "-s", strconv.Itoa(size))
				if !strings.HasSuffix(test, "_lat") {
					args = append(args, "-t", "4")
				}
				checkPerfDoc(t, runPerf(t, args...), test, strings.Fields(where)[0], qps, size, qps*n)
			})
		}
	}
}

// TestPerfQPsLatencyTurns checks that a latency test with -q goes over
// the connections in turn: every connection makes -n round trips (the
// server counts each connection's echoes, and the client checks them
// against its own at the end of each step), -D runs too, and the turns
// stay in step from one step to the next.
func TestPerfQPsLatencyTurns(t *testing.T) {
	out := runPerf(t, "send_lat", "--provider", "loop", "-q", "4", "-n", "10", "-Q", "3", "-s", "64", "--json")
	checkPerfDoc(t, out, "send_lat", "loop", 4, 64, 40)
	out = runPerf(t, "write_lat", "--provider", "loop", "-q", "2", "-D", "1", "-s", "8")
	checkPerfTable(t, "write_lat", out, []int{8}, 0)
	// Over tcp, with the server in a second process and polling: the
	// server's last answer of the warm-up step completes only with the
	// client's next messages (the end marker, the next step), which the
	// server takes while it waits for that completion.
	out = runPerf(t, "write_lat", "--provider", "tcp", "-q", "2", "-n", "200", "-s", "8")
	checkPerfTable(t, "write_lat", out, []int{8}, 400)
}

// cqCountingProvider wraps a provider: each adapter it opens counts the
// completion queues created on it.
type cqCountingProvider struct {
	nd.Provider
	mu       sync.Mutex
	adapters []*cqCountingAdapter
}

// OpenAdapter opens the wrapped provider's adapter, wrapped.
func (p *cqCountingProvider) OpenAdapter(addr netip.Addr) (nd.Adapter, error) {
	a, err := p.Provider.OpenAdapter(addr)
	if err != nil {
		return nil, err
	}
	ca := &cqCountingAdapter{Adapter: a}
	p.mu.Lock()
	p.adapters = append(p.adapters, ca)
	p.mu.Unlock()
	return ca, nil
}

// counts returns the number of completion queues created on each adapter
// opened, in order.
func (p *cqCountingProvider) counts() []int {
	p.mu.Lock()
	defer p.mu.Unlock()
	var n []int
	for _, a := range p.adapters {
		a.mu.Lock()
		n = append(n, a.cqs)
		a.mu.Unlock()
	}
	return n
}

// cqCountingAdapter counts the completion queues created on it; the rest
// is the wrapped adapter's.
type cqCountingAdapter struct {
	nd.Adapter
	mu  sync.Mutex
	cqs int
}

// CreateCompletionQueue counts and creates the wrapped adapter's.
func (a *cqCountingAdapter) CreateCompletionQueue(entries int) (nd.CompletionQueue, error) {
	a.mu.Lock()
	a.cqs++
	a.mu.Unlock()
	return a.Adapter.CreateCompletionQueue(entries)
}

// TestPerfOneCQ runs each test in this process over adapters that count
// their completion queues: the server's and the client's each create
// exactly one, whatever -q.
func TestPerfOneCQ(t *testing.T) {
	for _, provider := range []string{"loop", "tcp"} {
		for _, test := range perftest.Tests {
			for _, qps := range []int{1, 5} {
				t.Run(provider+"/"+test.Name+"/q"+strconv.Itoa(qps), func(t *testing.T) {
					p, addrs, err := session.OpenProvider(provider)
					if err != nil {
						t.Fatal(err)
					}
					counting := &cqCountingProvider{Provider: p}
					c := &perftest.Config{
						Test: perftest.TestNamed(test.Name), Provider: session.ProviderOpts{Name: provider}, Size: 100, Iters: 12, Warmup: -1,
						QPs: qps, TxDepth: 4, CQMod: 5, Blocking: true, JSON: true, Stderr: io.Discard,
					}
					if test.Lat {
						c.TxDepth = 1
					}
					ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
					defer cancel()
					var out strings.Builder
					if err := session.RunLocal(ctx, c, counting, addrs, 0, &out); err != nil {
						t.Fatal(err)
					}
					if got := counting.counts(); len(got) != 2 || got[0] != 1 || got[1] != 1 {
						t.Errorf("completion queues created on the server's and the client's adapters: %v, want [1 1]", got)
					}
					checkPerfDoc(t, out.String(), test.Name, provider, qps, 100, qps*12)
				})
			}
		}
	}
}
