package perftest

// nd perf --plot: bandwidth (bw tests) or latency (lat tests, on a
// logarithmic axis) against the message size, on a logarithmic size axis, drawn with gonum's plot
// package into a PNG file. Only the nd command uses the plotting library.

import (
	"fmt"
	"os"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
)

// The size of the picture.
const (
	plotWidth  = 8 * vg.Inch
	plotHeight = 5 * vg.Inch
)

// plotSeries is a named line of the plot.
type plotSeries struct {
	name string
	xys  plotter.XYs
}

// writePlot draws the rows of r into a PNG file at path, whatever its name
// ends in.
func writePlot(path string, r *perfReport) error {
	p := plot.New()
	res := &r.result
	p.Title.Text = fmt.Sprintf("nd perf %s over %s (%s)", res.Test, res.Provider, res.Title)
	p.X.Label.Text = "message size [bytes]"
	p.X.Scale = plot.LogScale{}
	p.X.Tick.Marker = plot.LogTicks{Prec: -1}
	p.Legend.Top = true
	p.Legend.Left = true
	p.Add(plotter.NewGrid())

	var series []plotSeries
	if r.cfg.Test.Lat {
		p.Y.Label.Text = "latency [usec]"
		series = []plotSeries{{name: "t_typical (median)"}, {name: "t_avg"}, {name: "99% percentile"}}
		for _, row := range r.lat {
			x := float64(row.Bytes)
			series[0].xys = append(series[0].xys, plotter.XY{X: x, Y: row.TTypical})
			series[1].xys = append(series[1].xys, plotter.XY{X: x, Y: row.TAvg})
			series[2].xys = append(series[2].xys, plotter.XY{X: x, Y: row.P99})
		}
	} else {
		p.Y.Label.Text = "bandwidth [" + r.bwUnit() + "]"
		series = []plotSeries{{name: "BW average"}, {name: "BW peak"}}
		for _, row := range r.bw {
			x := float64(row.Bytes)
			series[0].xys = append(series[0].xys, plotter.XY{X: x, Y: row.BWAverage})
			series[1].xys = append(series[1].xys, plotter.XY{X: x, Y: row.BWPeak})
		}
	}
	var lines []any
	for _, s := range series {
		lines = append(lines, s.name, s.xys)
	}
	if err := plotutil.AddLinePoints(p, lines...); err != nil {
		return err
	}
	// One size alone would give the axis no width.
	if sizes := res.Parameters.Sizes; len(sizes) > 0 {
		lo, hi := float64(sizes[0]), float64(sizes[len(sizes)-1])
		p.X.Min, p.X.Max = lo/2, hi*2
	}
	if r.cfg.Test.Lat && p.Y.Min > 0 {
		// Latencies span decades from small messages to large ones.
		p.Y.Scale = plot.LogScale{}
		p.Y.Tick.Marker = plot.LogTicks{Prec: -1}
		p.Y.Min, p.Y.Max = p.Y.Min/1.5, p.Y.Max*4 // room for the legend
	} else {
		p.Y.Min = 0
		p.Y.Max *= 1.1 // room for the legend's top
	}
	w, err := p.WriterTo(plotWidth, plotHeight, "png")
	if err != nil {
		return err
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := w.WriteTo(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
