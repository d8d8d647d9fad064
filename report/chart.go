package report

import (
	"fmt"
	"image/color"
	"io"
	"math"
	"sort"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"

	"github.com/pgceiling/pgceiling/result"
)

// Chart is one figure of a report: one plot, or a grid of aligned panels sharing an x
// axis (Panels[row][col]). Name is its file stem ("achieved-oltp").
type Chart struct {
	Name   string
	Title  string
	Panels [][]*plot.Plot
	Width  vg.Length
	Height vg.Length
}

// Chart sizes: 960 x 576 px at ChartDPI.
const (
	ChartDPI    = 96
	chartWidth  = 10 * vg.Inch
	chartHeight = 6 * vg.Inch
)

// draw draws the chart's panels on dc.
func (c Chart) draw(dc draw.Canvas) {
	if len(c.Panels) == 1 && len(c.Panels[0]) == 1 {
		c.Panels[0][0].Draw(dc)
		return
	}
	rows, cols := len(c.Panels), 0
	for _, r := range c.Panels {
		cols = max(cols, len(r))
	}
	tiles := draw.Tiles{Rows: rows, Cols: cols, PadTop: 4, PadBottom: 4, PadLeft: 4, PadRight: 8, PadX: 20, PadY: 12}
	canvases := plot.Align(c.Panels, tiles, dc)
	for i, r := range c.Panels {
		for j, p := range r {
			if p != nil {
				p.Draw(canvases[i][j])
			}
		}
	}
}

// safeDraw draws the chart, turning a panic of the plotting library (it panics on some
// degenerate data) into an error: a report must never end in a stack trace.
func (c Chart) safeDraw(dc draw.Canvas) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("chart %s: cannot draw: %v", c.Name, r)
		}
	}()
	c.draw(dc)
	return nil
}

// WritePNG writes the chart as a PNG image of Width x Height at ChartDPI.
func (c Chart) WritePNG(w io.Writer) error {
	img := vgimg.NewWith(vgimg.UseWH(c.Width, c.Height), vgimg.UseDPI(ChartDPI), vgimg.UseBackgroundColor(color.White))
	if err := c.safeDraw(draw.New(img)); err != nil {
		return err
	}
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(w); err != nil {
		return fmt.Errorf("chart %s: png: %w", c.Name, err)
	}
	return nil
}

// WriteSVG writes the chart as an SVG document.
func (c Chart) WriteSVG(w io.Writer) error {
	svg := vgsvg.New(c.Width, c.Height)
	if err := c.safeDraw(draw.New(svg)); err != nil {
		return err
	}
	if _, err := svg.WriteTo(w); err != nil {
		return fmt.Errorf("chart %s: svg: %w", c.Name, err)
	}
	return nil
}

var (
	syncColors = map[result.SyncCommit]color.Color{
		result.SyncOn:  color.RGBA{R: 31, G: 119, B: 180, A: 255},
		result.SyncOff: color.RGBA{R: 255, G: 127, B: 14, A: 255},
	}
	otherColor = color.RGBA{R: 44, G: 160, B: 44, A: 255}
	grey       = color.RGBA{R: 150, G: 150, B: 150, A: 255}
	red        = color.RGBA{R: 214, G: 39, B: 40, A: 255}
	purple     = color.RGBA{R: 148, G: 103, B: 189, A: 255}
	palette    = []color.Color{
		color.RGBA{R: 31, G: 119, B: 180, A: 255}, color.RGBA{R: 255, G: 127, B: 14, A: 255},
		color.RGBA{R: 44, G: 160, B: 44, A: 255}, color.RGBA{R: 214, G: 39, B: 40, A: 255},
		color.RGBA{R: 148, G: 103, B: 189, A: 255}, color.RGBA{R: 140, G: 86, B: 75, A: 255},
		color.RGBA{R: 227, G: 119, B: 194, A: 255}, color.RGBA{R: 188, G: 189, B: 34, A: 255},
		color.RGBA{R: 23, G: 190, B: 207, A: 255}, grey,
	}
)

func sweepColor(s *result.Sweep, i int) color.Color {
	if c, ok := syncColors[s.SyncCommit]; ok {
		return c
	}
	return palette[i%len(palette)]
}

// Charts builds every chart the file supports: per workload, achieved vs offered rate and
// latency vs offered rate (its sweeps side by side); per sweep, the timelines of the probe
// at the knee and of the first failing probe (of the one probe, for a run), and the
// wait-event shares per probe when the probes were observed.
func Charts(f *result.File) (charts []Chart, err error) {
	var workloads []string
	byWorkload := map[string][]*result.Sweep{}
	for i := range f.Sweeps {
		s := &f.Sweeps[i]
		if len(byWorkload[s.Workload]) == 0 {
			workloads = append(workloads, s.Workload)
		}
		byWorkload[s.Workload] = append(byWorkload[s.Workload], s)
	}
	defer func() {
		if unsafeServer(f) {
			for i := range charts {
				charts[i].Title += " [fsync=off: NOT DURABLE]"
				charts[i].Panels[0][0].Title.Text += " [fsync=off: NOT DURABLE]"
				charts[i].Panels[0][0].Title.TextStyle.Color = red
			}
		}
	}()
	for _, w := range workloads {
		c, err := achievedChart(w, byWorkload[w])
		if err != nil {
			return nil, err
		}
		charts = append(charts, c)
		c, err = latencyChart(w, byWorkload[w])
		if err != nil {
			return nil, err
		}
		charts = append(charts, c)
	}
	for i := range f.Sweeps {
		s := &f.Sweeps[i]
		picks := []struct {
			kind, label string
			p           *result.Probe
		}{{"knee", "probe at the knee", kneeProbe(s)}, {"first-fail", "first failing probe", firstFailing(s)}}
		if picks[0].p == nil && picks[1].p == nil && len(s.Probes) == 1 {
			// A run: one probe, no search verdicts.
			picks = append(picks[:0], picks[0])
			picks[0].kind, picks[0].label, picks[0].p = "probe", "probe", &s.Probes[0]
		}
		for _, pick := range picks {
			if pick.p == nil || len(pick.p.Series) == 0 {
				continue
			}
			c, err := timelineChart(s, pick.p, pick.kind, pick.label)
			if err != nil {
				return nil, err
			}
			charts = append(charts, c)
		}
		c, ok, err := waitsChart(s)
		if err != nil {
			return nil, err
		}
		if ok {
			charts = append(charts, c)
		}
	}
	return charts, nil
}

func slug(parts ...string) string {
	s := strings.ToLower(strings.Join(parts, "-"))
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' {
			return r
		}
		return '_'
	}, s)
}

// rateTicks labels an axis of rates or counts with whole numbers and thousands separators
// ("2,400", not "2400.00").
type rateTicks struct{}

// Ticks returns gonum's default ticks, relabelled.
func (rateTicks) Ticks(lo, hi float64) []plot.Tick {
	ticks := plot.DefaultTicks{}.Ticks(lo, hi)
	for i := range ticks {
		if ticks[i].Label == "" {
			continue
		}
		v := ticks[i].Value
		if v == math.Trunc(v) {
			ticks[i].Label = num(v, 0)
		} else {
			ticks[i].Label = num(v, 1)
		}
	}
	return ticks
}

func newPlot(title, x, y string) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.Title.Padding = vg.Points(6)
	p.X.Label.Text = x
	p.Y.Label.Text = y
	p.Add(plotter.NewGrid())
	p.Legend.Top = true
	p.Legend.Left = true
	return p
}

// byRate returns the sweep's probes in offered-rate order (retries of a rate: the last).
func byRate(s *result.Sweep) []*result.Probe {
	last := map[float64]*result.Probe{}
	for i := range s.Probes {
		last[s.Probes[i].TargetRate] = &s.Probes[i]
	}
	out := make([]*result.Probe, 0, len(last))
	for _, p := range last {
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].TargetRate < out[j].TargetRate })
	return out
}

// achievedChart: achieved against offered rate, the y=x diagonal, failures crossed, the
// knee ringed (with its interval as a horizontal error bar when it has one); every sweep of the workload (sync on and off) on one plot.
func achievedChart(workload string, sweeps []*result.Sweep) (Chart, error) {
	p := newPlot(workload+": achieved vs offered rate", "offered rate (tx/s)", "achieved rate (tx/s)")
	p.X.Tick.Marker, p.Y.Tick.Marker = rateTicks{}, rateTicks{}
	var maxRate float64
	for _, s := range sweeps {
		for _, pr := range s.Probes {
			maxRate = max(maxRate, pr.TargetRate, pr.AchievedRate)
		}
	}
	diag, err := plotter.NewLine(plotter.XYs{{X: 0, Y: 0}, {X: maxRate, Y: maxRate}})
	if err != nil {
		return Chart{}, fmt.Errorf("chart achieved %s: %w", workload, err)
	}
	diag.Color, diag.Dashes = grey, []vg.Length{vg.Points(4), vg.Points(4)}
	p.Add(diag)
	p.Legend.Add("achieved = offered", diag)
	for i, s := range sweeps {
		col := sweepColor(s, i)
		probes := byRate(s)
		var all, fails plotter.XYs
		for _, pr := range probes {
			xy := plotter.XY{X: pr.TargetRate, Y: pr.AchievedRate}
			all = append(all, xy)
			if failing(pr) {
				fails = append(fails, xy)
			}
		}
		legend := "sync=" + string(s.SyncCommit)
		if len(fails) > 0 {
			legend += " (x = failed probe)"
		}
		if err := addLinePoints(p, all, col, legend, nil); err != nil {
			return Chart{}, fmt.Errorf("chart achieved %s: %w", workload, err)
		}
		if len(fails) > 0 {
			sc, err := plotter.NewScatter(fails)
			if err != nil {
				return Chart{}, fmt.Errorf("chart achieved %s: %w", workload, err)
			}
			sc.GlyphStyle = draw.GlyphStyle{Color: red, Radius: vg.Points(7), Shape: draw.CrossGlyph{}}
			p.Add(sc)
		}
		if k := kneeProbe(s); k != nil {
			at := plotter.XY{X: k.TargetRate, Y: k.AchievedRate}
			if iv := s.Interval; iv != nil && iv.Hi >= iv.Lo {
				// The knee's interval as a horizontal error bar through the knee.
				bar, err := plotter.NewXErrorBars(kneeBar{at: at, lo: iv.Lo, hi: iv.Hi})
				if err != nil {
					return Chart{}, fmt.Errorf("chart achieved %s: %w", workload, err)
				}
				bar.Color, bar.Width, bar.CapWidth = col, vg.Points(2), vg.Points(8)
				p.Add(bar)
				maxRate = max(maxRate, iv.Hi)
			}
			if err := markKnee(p, at, col, fmt.Sprintf("knee sync=%s: %s", s.SyncCommit, kneeWithInterval(s, " tx/s"))); err != nil {
				return Chart{}, fmt.Errorf("chart achieved %s: %w", workload, err)
			}
		}
	}
	p.X.Min, p.Y.Min = 0, 0
	p.X.Max, p.Y.Max = math.Max(maxRate, 1)*1.05, math.Max(maxRate, 1)*1.05
	return Chart{Name: slug("achieved", workload), Title: p.Title.Text, Panels: [][]*plot.Plot{{p}}, Width: chartWidth, Height: chartHeight}, nil
}

// kneeBar is one knee with its interval, for plotter.NewXErrorBars.
type kneeBar struct {
	at     plotter.XY
	lo, hi float64
}

func (b kneeBar) Len() int                      { return 1 }
func (b kneeBar) XY(int) (float64, float64)     { return b.at.X, b.at.Y }
func (b kneeBar) XError(int) (float64, float64) { return max(0, b.at.X-b.lo), max(0, b.hi-b.at.X) }

// addLinePoints adds a line with point glyphs in one colour, with a legend entry.
func addLinePoints(p *plot.Plot, xys plotter.XYs, col color.Color, legend string, dashes []vg.Length) error {
	if len(xys) == 0 {
		return nil
	}
	l, sc, err := plotter.NewLinePoints(xys)
	if err != nil {
		return err
	}
	l.Color, l.Width, l.Dashes = col, vg.Points(1.5), dashes
	sc.GlyphStyle = draw.GlyphStyle{Color: col, Radius: vg.Points(2.5), Shape: draw.CircleGlyph{}}
	p.Add(l, sc)
	if legend != "" {
		p.Legend.Add(legend, l, sc)
	}
	return nil
}

// markKnee rings the knee and labels it.
func markKnee(p *plot.Plot, at plotter.XY, col color.Color, label string) error {
	ring, err := plotter.NewScatter(plotter.XYs{at})
	if err != nil {
		return err
	}
	ring.GlyphStyle = draw.GlyphStyle{Color: col, Radius: vg.Points(9), Shape: draw.RingGlyph{}}
	lbl, err := plotter.NewLabels(plotter.XYLabels{XYs: plotter.XYs{at}, Labels: []string{label}})
	if err != nil {
		return err
	}
	lbl.Offset = vg.Point{X: vg.Points(10), Y: vg.Points(-14)}
	for i := range lbl.TextStyle {
		lbl.TextStyle[i].Color = col
	}
	p.Add(ring, lbl)
	return nil
}

// latencyChart: p50 (dashed) and p99 (solid) against offered rate, log scale, per sweep.
func latencyChart(workload string, sweeps []*result.Sweep) (Chart, error) {
	p := newPlot(workload+": latency vs offered rate (intended start to commit)", "offered rate (tx/s)", "latency (ms, log scale)")
	p.Y.Scale = plot.LogScale{}
	p.X.Tick.Marker = rateTicks{}
	p.Y.Tick.Marker = plot.LogTicks{Prec: -1}
	pos := func(v float64) float64 { return math.Max(v, 0.01) }
	for i, s := range sweeps {
		col := sweepColor(s, i)
		var p50, p99 plotter.XYs
		for _, pr := range byRate(s) {
			if pr.Latency.Count == 0 && pr.Committed == 0 {
				continue
			}
			p50 = append(p50, plotter.XY{X: pr.TargetRate, Y: pos(pr.Latency.P50)})
			p99 = append(p99, plotter.XY{X: pr.TargetRate, Y: pos(pr.Latency.P99)})
		}
		if err := addLinePoints(p, p99, col, "p99 sync="+string(s.SyncCommit), nil); err != nil {
			return Chart{}, fmt.Errorf("chart latency %s: %w", workload, err)
		}
		if err := addLinePoints(p, p50, col, "p50 sync="+string(s.SyncCommit), []vg.Length{vg.Points(5), vg.Points(3)}); err != nil {
			return Chart{}, fmt.Errorf("chart latency %s: %w", workload, err)
		}
		if k := kneeProbe(s); k != nil {
			if err := markKnee(p, plotter.XY{X: k.TargetRate, Y: pos(k.Latency.P99)}, col, "knee sync="+string(s.SyncCommit)); err != nil {
				return Chart{}, fmt.Errorf("chart latency %s: %w", workload, err)
			}
		}
	}
	// A log axis needs a positive range, also when no probe committed anything.
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, s := range sweeps {
		for _, pr := range s.Probes {
			if pr.Latency.Count > 0 || pr.Committed > 0 {
				lo, hi = math.Min(lo, pos(pr.Latency.P50)), math.Max(hi, pos(pr.Latency.P99))
			}
		}
	}
	if math.IsInf(lo, 0) || math.IsInf(hi, 0) {
		lo, hi = 1, 1000
	}
	p.Y.Min, p.Y.Max = lo/1.5, hi*1.5
	p.X.Min = 0
	return Chart{Name: slug("latency", workload), Title: p.Title.Text, Panels: [][]*plot.Plot{{p}}, Width: chartWidth, Height: chartHeight}, nil
}

// timelineChart: a probe's per-second series, rates on top and p99 below, warm-up marked.
func timelineChart(s *result.Sweep, pr *result.Probe, kind, label string) (Chart, error) {
	title := fmt.Sprintf("%s: %s, %s tx/s offered (%s)", sweepName(s), label, rate(pr.TargetRate), orDash(string(pr.Verdict)))
	top := newPlot(title, "", "per second (tx/s)")
	bottom := newPlot("", "time since probe start (s)", "p99 latency (ms)")
	top.Legend.Left, bottom.Legend.Left = false, false
	top.Y.Tick.Marker = rateTicks{}
	var offered, committed, errs, p99, queue plotter.XYs
	warmEnd := -1.0
	for _, sec := range pr.Series {
		x := float64(sec.T)
		offered = append(offered, plotter.XY{X: x, Y: float64(sec.Offered)})
		committed = append(committed, plotter.XY{X: x, Y: float64(sec.Committed)})
		errs = append(errs, plotter.XY{X: x, Y: float64(sec.Failed.Total())})
		p99 = append(p99, plotter.XY{X: x, Y: sec.P99Ms})
		queue = append(queue, plotter.XY{X: x, Y: sec.QueueWaitP99Ms})
		if sec.Phase == result.PhaseWarmup {
			warmEnd = x + 1
		}
	}
	for _, l := range []struct {
		xys    plotter.XYs
		col    color.Color
		name   string
		dashes []vg.Length
	}{{offered, grey, "offered", []vg.Length{vg.Points(4), vg.Points(3)}}, {committed, syncColors[result.SyncOn], "committed", nil}, {errs, red, "failed + rejected", nil}} {
		if err := addLinePoints(top, l.xys, l.col, l.name, l.dashes); err != nil {
			return Chart{}, fmt.Errorf("chart timeline: %w", err)
		}
	}
	if err := addLinePoints(bottom, p99, purple, "p99 latency", nil); err != nil {
		return Chart{}, fmt.Errorf("chart timeline: %w", err)
	}
	if err := addLinePoints(bottom, queue, otherColor, "queue wait p99", []vg.Length{vg.Points(4), vg.Points(3)}); err != nil {
		return Chart{}, fmt.Errorf("chart timeline: %w", err)
	}
	if warmEnd > 0 {
		for _, p := range []*plot.Plot{top, bottom} {
			_, _, _, ymax := plotter.XYRange(offered)
			if p == bottom {
				_, _, _, ymax = plotter.XYRange(p99)
			}
			l, err := plotter.NewLine(plotter.XYs{{X: warmEnd, Y: 0}, {X: warmEnd, Y: ymax}})
			if err != nil {
				return Chart{}, fmt.Errorf("chart timeline: %w", err)
			}
			l.Color, l.Dashes = grey, []vg.Length{vg.Points(2), vg.Points(2)}
			p.Add(l)
			if p == top {
				p.Legend.Add("end of warm-up", l)
			}
		}
	}
	// Headroom above the lines for the legend.
	_, _, _, ymax := plotter.XYRange(offered)
	top.Y.Max = math.Max(ymax, 1) * 1.45
	_, _, _, ymax = plotter.XYRange(p99)
	bottom.Y.Max = math.Max(ymax, 1) * 1.45
	for _, p := range []*plot.Plot{top, bottom} {
		p.X.Min, p.Y.Min = 0, 0
		p.Legend.Left = true
	}
	return Chart{Name: slug("timeline", s.Workload, "sync", string(s.SyncCommit), kind), Title: title,
		Panels: [][]*plot.Plot{{top}, {bottom}}, Width: chartWidth, Height: chartHeight}, nil
}

// maxWaitSeries is how many wait events get their own colour; the rest are "other".
const maxWaitSeries = 7

// waitsChart: per probe (by offered rate), the share of active samples per wait event as
// stacked bars. ok is false when no probe of the sweep was observed.
func waitsChart(s *result.Sweep) (Chart, bool, error) {
	probes := byRate(s)
	total := map[string]float64{}
	observed := false
	for _, pr := range probes {
		if pr.Observation == nil {
			continue
		}
		for _, w := range pr.Observation.Waits {
			total[w.Event] += w.Share
			observed = true
		}
	}
	if !observed {
		return Chart{}, false, nil
	}
	events := make([]string, 0, len(total))
	for e := range total {
		events = append(events, e)
	}
	sort.Slice(events, func(i, j int) bool {
		if total[events[i]] != total[events[j]] {
			return total[events[i]] > total[events[j]]
		}
		return events[i] < events[j]
	})
	if len(events) > maxWaitSeries {
		events = append(events[:maxWaitSeries], "other")
	}
	index := map[string]int{}
	for i, e := range events {
		index[e] = i
	}
	values := make([]plotter.Values, len(events))
	for i := range values {
		values[i] = make(plotter.Values, len(probes))
	}
	var names []string
	for j, pr := range probes {
		name := rate(pr.TargetRate)
		if pr.TargetRate == s.Knee && pr.Verdict == result.Pass {
			name += " knee"
		} else if failing(pr) {
			name += " x"
		}
		names = append(names, name)
		if pr.Observation == nil {
			continue
		}
		for _, w := range pr.Observation.Waits {
			i, ok := index[w.Event]
			if !ok {
				i = index["other"]
			}
			values[i][j] += w.Share * 100
		}
	}
	title := sweepName(s) + ": wait events per probe (x = failed)"
	p := newPlot(title, "offered rate (tx/s)", "share of active samples (%)")
	p.Legend.Left = false
	p.Legend.XOffs = -vg.Points(6)
	width := vg.Points(math.Max(8, math.Min(40, 500/float64(len(probes)))))
	var below *plotter.BarChart
	for i, e := range events {
		b, err := plotter.NewBarChart(values[i], width)
		if err != nil {
			return Chart{}, false, fmt.Errorf("chart waits %s: %w", sweepName(s), err)
		}
		b.Color = palette[i%len(palette)]
		b.LineStyle.Width = 0
		if below != nil {
			b.StackOn(below)
		}
		below = b
		p.Add(b)
		p.Legend.Add(e, b)
	}
	p.NominalX(names...)
	// Room on the right for the legend, beside the bars rather than over them.
	p.X.Max = float64(len(probes)) + 1.5
	p.Y.Min, p.Y.Max = 0, 100
	return Chart{Name: slug("waits", s.Workload, "sync", string(s.SyncCommit)), Title: title,
		Panels: [][]*plot.Plot{{p}}, Width: chartWidth, Height: chartHeight}, true, nil
}
