package perftest

// nd perf's output: perftest's header and columns with their units, or one
// JSON document with --json; the plot with --plot; and a progress line
// while it measures, only on a terminal.

import (
	"encoding/json"
	"fmt"
	"io"
	"net/netip"
	"os"
	"strings"
)

// Line is perftest's rule between the parts of its output.
var Line = strings.Repeat("-", 87)

// Params are the parameters of a run, as --json reports them.
type Params struct {
	Client      string `json:"client"`
	Server      string `json:"server"`
	Sizes       []int  `json:"sizes"`
	All         bool   `json:"all"`
	Iterations  int    `json:"iterations"`
	DurationSec int    `json:"duration_sec"`
	QPs         int    `json:"qps"`
	TxDepth     int    `json:"tx_depth"`
	ReportGbits bool   `json:"report_gbits"`
	UseSRQ      bool   `json:"use_srq"`
	Blocking    bool   `json:"blocking"`
	CRC         bool   `json:"crc"`
	MaxInline   int    `json:"max_inline"`
}

// perfResult is the JSON document of a run.
type perfResult struct {
	Test       string            `json:"test"`
	Title      string            `json:"title"`
	Provider   string            `json:"provider"`
	Parameters Params            `json:"parameters"`
	Units      map[string]string `json:"units"`
	Results    any               `json:"results"` // []perfBWRow or []perfLatRow
}

// perfReport prints and collects the rows of a run.
type perfReport struct {
	cfg     *Config
	out     io.Writer
	result  perfResult
	bw      []perfBWRow
	lat     []perfLatRow
	showing bool // a progress line is on the terminal
}

// newReport starts the report of a run from local to remote; pc is the
// first connection.
func (c *Config) newReport(local netip.Addr, remote netip.AddrPort, pc *perfConn, out io.Writer) *perfReport {
	r := &perfReport{cfg: c, out: out}
	r.result = perfResult{
		Test:     c.Test.Name,
		Title:    c.Test.Title,
		Provider: c.Provider.Name,
		Parameters: Params{
			Client: local.String(), Server: remote.String(), Sizes: c.sizes(), All: c.all,
			Iterations: c.Iters, DurationSec: c.duration, QPs: c.QPs, TxDepth: len(pc.ops.Results),
			ReportGbits: c.gbits, UseSRQ: c.useSRQ, Blocking: c.Blocking, CRC: c.Provider.CRC, MaxInline: pc.inline,
		},
		Units: map[string]string{"bytes": "B"},
	}
	if c.Test.Lat {
		r.result.Units["latency"] = "usec"
	} else {
		r.result.Units["bw"] = r.bwUnit()
		r.result.Units["msg_rate"] = "Mpps"
	}
	return r
}

// bwUnit is the unit of the bandwidth columns.
func (r *perfReport) bwUnit() string {
	if r.cfg.gbits {
		return "Gb/sec"
	}
	return "MB/sec"
}

// bwColumns and latColumns are perftest's column headings.
func (r *perfReport) bwColumns() []string {
	u := r.bwUnit()
	return []string{"#bytes", "#iterations", "BW peak[" + u + "]", "BW average[" + u + "]", "MsgRate[Mpps]"}
}

var latColumns = []string{"#bytes", "#iterations", "t_min[usec]", "t_max[usec]", "t_typical[usec]",
	"t_avg[usec]", "t_stdev[usec]", "99% percentile[usec]", "99.9% percentile[usec]"}

// The widths of the columns, heading and values alike.
var (
	bwWidths  = []int{10, 14, 18, 20, 0}
	latWidths = []int{7, 12, 14, 14, 16, 14, 16, 22, 0}
)

// columns formats cells in columns of widths, separated by a space.
func columns(cells []string, widths []int) string {
	var b strings.Builder
	for i, c := range cells {
		fmt.Fprintf(&b, " %-*s", widths[i], c)
	}
	return strings.TrimRight(b.String(), " ")
}

// header prints the test's header and the column line (not with --json).
func (r *perfReport) header() {
	if r.cfg.JSON {
		return
	}
	c, p := r.cfg, &r.result.Parameters
	mode := "polling"
	if c.Blocking {
		mode = "blocking (Notify)"
	}
	run := fmt.Sprintf("Iterations      : %d per size", c.Iters)
	if c.duration > 0 {
		run = fmt.Sprintf("Duration        : %d sec per size", c.duration)
	}
	fmt.Fprintln(r.out, Line)
	fmt.Fprintf(r.out, "%*s\n", 20+len(c.Test.Title), c.Test.Title)
	fmt.Fprintf(r.out, " Provider        : %-18s Connection : %s -> %s\n", c.Provider.Name, p.Client, p.Server)
	fmt.Fprintf(r.out, " Number of qps   : %-18d TX depth   : %d\n", c.QPs, p.TxDepth)
	fmt.Fprintf(r.out, " Completions     : %-18s Max inline : %d[B]\n", mode, p.MaxInline)
	fmt.Fprintf(r.out, " %s\n", run)
	fmt.Fprintln(r.out, Line)
	if c.Test.Lat {
		fmt.Fprintln(r.out, columns(latColumns, latWidths))
	} else {
		fmt.Fprintln(r.out, columns(r.bwColumns(), bwWidths))
	}
}

// addBW adds and prints a bandwidth row.
func (r *perfReport) addBW(row perfBWRow) {
	r.bw = append(r.bw, row)
	r.printRow(columns([]string{
		fmt.Sprint(row.Bytes), fmt.Sprint(row.Iterations), fmt.Sprintf("%.2f", row.BWPeak),
		fmt.Sprintf("%.2f", row.BWAverage), fmt.Sprintf("%.6f", row.MsgRate),
	}, bwWidths))
}

// addLat adds and prints a latency row.
func (r *perfReport) addLat(row perfLatRow) {
	r.lat = append(r.lat, row)
	cells := []string{fmt.Sprint(row.Bytes), fmt.Sprint(row.Iterations)}
	for _, v := range []float64{row.TMin, row.TMax, row.TTypical, row.TAvg, row.TStdev, row.P99, row.P999} {
		cells = append(cells, fmt.Sprintf("%.2f", v))
	}
	r.printRow(columns(cells, latWidths))
}

// printRow prints a row of the table, over the progress line.
func (r *perfReport) printRow(line string) {
	if r.cfg.JSON {
		return
	}
	r.clearProgress()
	fmt.Fprintln(r.out, line)
}

// progress shows which size of how many is being measured, on a terminal.
func (r *perfReport) progress(k, n, size int) {
	if r.cfg.progressTo == nil {
		return
	}
	fmt.Fprintf(r.cfg.progressTo, "\r\033[K nd perf %s: %d bytes (size %d of %d) ...", r.cfg.Test.Name, size, k+1, n)
	r.showing = true
}

// clearProgress removes the progress line.
func (r *perfReport) clearProgress() {
	if r.showing {
		fmt.Fprint(r.cfg.progressTo, "\r\033[K")
		r.showing = false
	}
}

// finish ends the table, or prints the JSON document, and draws the plot.
func (r *perfReport) finish() error {
	if r.cfg.Test.Lat {
		r.result.Results = r.lat
	} else {
		r.result.Results = r.bw
	}
	if r.cfg.JSON {
		enc := json.NewEncoder(r.out)
		enc.SetIndent("", "  ")
		if err := enc.Encode(r.result); err != nil {
			return err
		}
	} else {
		fmt.Fprintln(r.out, Line)
	}
	if r.cfg.plot != "" {
		if err := writePlot(r.cfg.plot, r); err != nil {
			return fmt.Errorf("--plot: %w", err)
		}
	}
	return nil
}

// isTerminal reports whether w is a terminal (a character device).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}
