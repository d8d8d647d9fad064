package report

import (
	"bytes"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/pgceiling/pgceiling/result"
)

// bDashes draws file B's lines in an overlay; file A's are solid.
var bDashes = []vg.Length{vg.Points(6), vg.Points(3)}

// CompareCharts overlays two results files of the same command (`pgceiling compare A B
// --report DIR`): for searches, per workload, achieved vs offered rate and p99 vs offered
// rate, A solid and B dashed in each sweep's colour, knees ringed; for runs, the probes'
// per-second committed rate and p99 against time.
func CompareCharts(a, b *result.File, nameA, nameB string) ([]Chart, error) {
	files := []struct {
		f      *result.File
		name   string
		dashes []vg.Length
	}{{a, "A " + nameA, nil}, {b, "B " + nameB, bDashes}}
	if a.Command == "run" && b.Command == "run" {
		p := newPlot("committed per second: A "+nameA+" vs B "+nameB, "seconds since the probe's start (warm-up included)", "committed ("+runUnit(a, b)+")")
		q := newPlot("p99 per second", "seconds since the probe's start (warm-up included)", "p99 latency (ms)")
		p.Y.Tick.Marker = rateTicks{}
		for _, x := range files {
			if len(x.f.Sweeps) == 0 || len(x.f.Sweeps[0].Probes) == 0 {
				continue
			}
			s := &x.f.Sweeps[0]
			var com, p99 plotter.XYs
			for _, sec := range s.Probes[0].Series {
				com = append(com, plotter.XY{X: float64(sec.T), Y: float64(sec.Committed)})
				p99 = append(p99, plotter.XY{X: float64(sec.T), Y: sec.P99Ms})
			}
			col := sweepColor(s, 0)
			if err := addLinePoints(p, com, col, x.name, x.dashes); err != nil {
				return nil, fmt.Errorf("compare chart: %w", err)
			}
			if err := addLinePoints(q, p99, col, x.name, x.dashes); err != nil {
				return nil, fmt.Errorf("compare chart: %w", err)
			}
		}
		p.Y.Min, q.Y.Min = 0, 0
		return []Chart{{Name: "compare-timeline", Title: p.Title.Text, Panels: [][]*plot.Plot{{p}, {q}}, Width: chartWidth, Height: chartHeight}}, nil
	}
	var workloads []string
	seen := map[string]bool{}
	for _, f := range []*result.File{a, b} {
		for _, s := range f.Sweeps {
			if !seen[s.Workload] {
				seen[s.Workload] = true
				workloads = append(workloads, s.Workload)
			}
		}
	}
	var charts []Chart
	for _, w := range workloads {
		unit := result.RateUnit(w)
		ach := newPlot(w+": achieved vs offered rate, A solid, B dashed", "offered rate ("+unit+")", "achieved rate ("+unit+")")
		ach.X.Tick.Marker, ach.Y.Tick.Marker = rateTicks{}, rateTicks{}
		lat := newPlot(w+": p99 latency vs offered rate, A solid, B dashed", "offered rate ("+unit+")", "p99 latency (ms, log scale)")
		lat.Y.Scale, lat.Y.Tick.Marker, lat.X.Tick.Marker = plot.LogScale{}, plot.LogTicks{Prec: -1}, rateTicks{}
		minRate, maxRate, lo, hi := math.Inf(1), 1.0, math.Inf(1), math.Inf(-1)
		pos := func(v float64) float64 { return math.Max(v, 0.01) }
		for _, x := range files {
			for i := range x.f.Sweeps {
				s := &x.f.Sweeps[i]
				if s.Workload != w {
					continue
				}
				col := sweepColor(s, i)
				label := fmt.Sprintf("%s sync=%s", x.name, s.SyncCommit)
				var all, p99 plotter.XYs
				for _, pr := range byRate(s) {
					all = append(all, plotter.XY{X: pr.TargetRate, Y: pr.AchievedRate})
					minRate, maxRate = min(minRate, pr.TargetRate, pr.AchievedRate), max(maxRate, pr.TargetRate, pr.AchievedRate)
					if pr.Latency.Count > 0 || pr.Committed > 0 {
						p99 = append(p99, plotter.XY{X: pr.TargetRate, Y: pos(pr.Latency.P99)})
						lo, hi = math.Min(lo, pos(pr.Latency.P99)), math.Max(hi, pos(pr.Latency.P99))
					}
				}
				if k := kneeProbe(s); k != nil {
					// The knee is ringed; its rate is in the legend, so labels never overlap.
					label += ", knee " + rate(s.Knee) + " " + unit
					ring, err := plotter.NewScatter(plotter.XYs{{X: k.TargetRate, Y: k.AchievedRate}})
					if err != nil {
						return nil, fmt.Errorf("compare chart %s: %w", w, err)
					}
					ring.GlyphStyle = draw.GlyphStyle{Color: col, Radius: vg.Points(9), Shape: draw.RingGlyph{}}
					ach.Add(ring)
				}
				if err := addLinePoints(ach, all, col, label, x.dashes); err != nil {
					return nil, fmt.Errorf("compare chart %s: %w", w, err)
				}
				if err := addLinePoints(lat, p99, col, label, x.dashes); err != nil {
					return nil, fmt.Errorf("compare chart %s: %w", w, err)
				}
			}
		}
		if math.IsInf(lo, 0) {
			lo, hi = 1, 1000
		}
		// Axes start near the data, not at 0.
		ach.X.Min, ach.X.Max = cmpPad(minRate, maxRate)
		ach.Y.Min, ach.Y.Max = ach.X.Min, ach.X.Max
		lat.X.Min, lat.X.Max = ach.X.Min, ach.X.Max
		lat.Y.Min, lat.Y.Max = lo/1.5, hi*1.5
		charts = append(charts,
			Chart{Name: slug("compare-achieved", w), Title: ach.Title.Text, Panels: [][]*plot.Plot{{ach}}, Width: chartWidth, Height: chartHeight},
			Chart{Name: slug("compare-latency", w), Title: lat.Title.Text, Panels: [][]*plot.Plot{{lat}}, Width: chartWidth, Height: chartHeight})
	}
	return charts, nil
}

// WriteCompare writes the overlay charts of a and b into dir (created if missing) as PNG
// and SVG, each file written whole and renamed into place; it returns the paths written.
func WriteCompare(dir string, a, b *result.File, nameA, nameB string) ([]string, error) {
	charts, err := CompareCharts(a, b, nameA, nameB)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("report directory: %w", err)
	}
	var written []string
	for _, c := range charts {
		for _, f := range []struct {
			ext   string
			write func(io.Writer) error
		}{{".png", c.WritePNG}, {".svg", c.WriteSVG}} {
			var buf bytes.Buffer
			if err := f.write(&buf); err != nil {
				return written, err
			}
			path := filepath.Join(dir, c.Name+f.ext)
			if err := result.WriteFileAtomic(path, buf.Bytes()); err != nil {
				return written, err
			}
			written = append(written, path)
		}
	}
	return written, nil
}

// cmpPad widens [lo, hi] by 5 % on each side (never below 0), for axes that start near the
// data; an empty range becomes [0, 1].
func cmpPad(lo, hi float64) (float64, float64) {
	if math.IsInf(lo, 0) || math.IsInf(hi, 0) || hi < lo {
		return 0, 1
	}
	pad := math.Max((hi-lo)*0.05, math.Max(math.Abs(hi)*0.01, 1))
	return math.Max(lo-pad, 0), hi + pad
}

// runUnit is the unit of two run files' committed series: rows/s when both ran copy,
// tx/s when neither did, and "tx/s or rows/s" for a mixed pair, whose lines then share
// one axis in two units (the legend names each file).
func runUnit(a, b *result.File) string {
	unit := func(f *result.File) string {
		if len(f.Sweeps) == 0 {
			return "tx/s"
		}
		return result.RateUnit(f.Sweeps[0].Workload)
	}
	ua, ub := unit(a), unit(b)
	if ua == ub {
		return ua
	}
	return "tx/s or rows/s"
}
