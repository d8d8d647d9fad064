package report

import (
	"fmt"
	"image/color"
	"io"
	"math"
	"sort"
	"strings"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"

	"github.com/pgceiling/pgceiling/result"
)

// Chart is one figure of a report: one plot, or a grid of aligned panels sharing an x
// axis (Panels[row][col]). Name is its file stem ("achieved-oltp"). Each panel's legend
// is drawn beside it, outside the data.
type Chart struct {
	Name   string
	Title  string
	Panels [][]*plot.Plot
	Width  vg.Length
	Height vg.Length

	series map[string]color.Color // the colour of each named series (wait events), for tests
	refs   []string               // the reference lines drawn, for tests
}

// Chart sizes: PNGs of 960 x 576 px at ChartDPI; SVGs of the same drawing at
// SVGScale times that size, for slides.
const (
	ChartDPI    = 96
	SVGScale    = 2
	chartWidth  = 10 * vg.Inch
	chartHeight = 6 * vg.Inch
)

// legendGap is the room between a panel and its legend.
const legendGap = 8

// draw draws the chart's panels on dc, each panel's legend in a strip to the right of
// the data, so no legend ever covers a point.
func (c Chart) draw(dc draw.Canvas) {
	dc.SetColor(color.White) // the legends' strip too (an SVG is transparent otherwise)
	dc.Fill(dc.Rectangle.Path())
	var legW vg.Length
	legends := make([][]plot.Legend, len(c.Panels))
	for i, r := range c.Panels {
		legends[i] = make([]plot.Legend, len(r))
		for j, p := range r {
			if p == nil {
				continue
			}
			legends[i][j] = p.Legend
			legW = max(legW, p.Legend.Rectangle(dc).Size().X)
			empty := plot.NewLegend()
			p.Legend = empty
		}
	}
	defer func() { // the plots are drawn again for the next format
		for i, r := range c.Panels {
			for j, p := range r {
				if p != nil {
					p.Legend = legends[i][j]
				}
			}
		}
	}()
	area := dc
	if legW > 0 {
		area = draw.Crop(dc, 0, -(legW + 2*legendGap), 0, 0)
	}
	rows, cols := len(c.Panels), 0
	for _, r := range c.Panels {
		cols = max(cols, len(r))
	}
	canvases := [][]draw.Canvas{{area}}
	if rows != 1 || cols != 1 {
		tiles := draw.Tiles{Rows: rows, Cols: cols, PadTop: 4, PadBottom: 4, PadLeft: 4, PadRight: 8, PadX: 20, PadY: 12}
		canvases = plot.Align(c.Panels, tiles, area)
	}
	for i, r := range c.Panels {
		for j, p := range r {
			if p == nil {
				continue
			}
			p.Draw(canvases[i][j])
			l := legends[i][j]
			l.Top, l.Left = true, true
			data := p.DataCanvas(canvases[i][j])
			strip := draw.Canvas{Canvas: dc.Canvas, Rectangle: vg.Rectangle{
				Min: vg.Point{X: area.Max.X + legendGap, Y: data.Min.Y},
				Max: vg.Point{X: dc.Max.X - legendGap, Y: data.Max.Y}}}
			l.Draw(strip)
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

// WriteSVG writes the chart as an SVG document of SVGScale times Width x Height (the
// same drawing, scaled: sharp on a slide).
func (c Chart) WriteSVG(w io.Writer) error {
	svg := vgsvg.New(c.Width*SVGScale, c.Height*SVGScale)
	svg.Scale(SVGScale, SVGScale)
	dc := draw.Canvas{Canvas: svg, Rectangle: vg.Rectangle{Max: vg.Point{X: c.Width, Y: c.Height}}}
	if err := c.safeDraw(dc); err != nil {
		return err
	}
	if _, err := svg.WriteTo(w); err != nil {
		return fmt.Errorf("chart %s: svg: %w", c.Name, err)
	}
	return nil
}

// The Okabe-Ito palette: eight colours told apart with every common colour-vision
// deficiency (Okabe & Ito, "Color Universal Design", 2008).
var (
	okBlack     = color.RGBA{R: 0, G: 0, B: 0, A: 255}
	okOrange    = color.RGBA{R: 230, G: 159, B: 0, A: 255}
	okSkyBlue   = color.RGBA{R: 86, G: 180, B: 233, A: 255}
	okGreen     = color.RGBA{R: 0, G: 158, B: 115, A: 255}
	okYellow    = color.RGBA{R: 240, G: 228, B: 66, A: 255}
	okBlue      = color.RGBA{R: 0, G: 114, B: 178, A: 255}
	okVermilion = color.RGBA{R: 213, G: 94, B: 0, A: 255}
	okPurple    = color.RGBA{R: 204, G: 121, B: 167, A: 255}
	grey        = color.RGBA{R: 150, G: 150, B: 150, A: 255}
	red         = okVermilion // warnings and failed transactions
	failMark    = okBlack     // the cross on a failed probe
	palette     = []color.Color{okBlue, okOrange, okGreen, okPurple, okSkyBlue, okVermilion, okYellow, okBlack}

	syncColors = map[result.SyncCommit]color.Color{result.SyncOn: okBlue, result.SyncOff: okOrange}
)

func sweepColor(s *result.Sweep, i int) color.Color {
	if c, ok := syncColors[s.SyncCommit]; ok {
		return c
	}
	return palette[i%len(palette)]
}

// waitClassColors gives each wait event type (the part before the colon) its colour, the
// same in every chart; CPU is a sample with no wait event.
var waitClassColors = map[string]color.RGBA{
	"CPU": okGreen, "IO": okBlue, "LWLock": okOrange, "Lock": okVermilion, "IPC": okPurple,
	"Client": okSkyBlue, "BufferPin": okYellow, "Activity": okBlack, "Timeout": okBlack, "Extension": okBlack,
}

// waitShades orders the events of one class that charts tell apart by shade: the first
// listed gets the class's colour, the next ones darker, then lighter, variants of it.
var waitShades = map[string][]string{
	"IO":     {"WALSync", "DataFileRead", "WALWrite", "DataFileWrite", "DataFileExtend"},
	"LWLock": {"WALWrite", "WALInsert", "BufferContent", "BufferMapping", "LockManager"},
	"Lock":   {"transactionid", "tuple", "relation", "extend"},
}

// waitColor is the colour of a wait event ("IO:WALSync", "CPU", "other") in every chart:
// its class's colour, shaded per event within the class.
func waitColor(event string) color.Color {
	class, name, _ := strings.Cut(event, ":")
	base, ok := waitClassColors[class]
	if !ok {
		return grey
	}
	shade := -1
	for i, n := range waitShades[class] {
		if n == name {
			shade = i
		}
	}
	if shade < 0 && name != "" { // an event not listed: a shade from its name, stable
		h := 0
		for _, r := range name {
			h = h*31 + int(r)
		}
		shade = 1 + (h&0x7fffffff)%4
	}
	// 0: the base; 1, 3: darker; 2, 4: lighter.
	f := []float64{0, -0.3, 0.35, -0.5, 0.6}[max(shade, 0)%5]
	mix := func(v uint8) uint8 {
		if f < 0 {
			return uint8(float64(v) * (1 + f))
		}
		return uint8(float64(v) + (255-float64(v))*f)
	}
	return color.RGBA{R: mix(base.R), G: mix(base.G), B: mix(base.B), A: 255}
}

// sansFont is the face every chart's text is set in.
var sansFont = font.Font{Typeface: "Liberation", Variant: "Sans"}

// sansSerif sets every text of p in sansFont, keeping its size.
func sansSerif(p *plot.Plot) {
	for _, f := range []*font.Font{&p.Title.TextStyle.Font, &p.X.Label.TextStyle.Font, &p.Y.Label.TextStyle.Font,
		&p.X.Tick.Label.Font, &p.Y.Tick.Label.Font, &p.Legend.TextStyle.Font} {
		*f = font.From(sansFont, f.Size)
	}
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
		c, err = latencyChart(w, byWorkload[w], sloMs(f))
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

// sloMs is the p99 SLO the command was given (its config's "p99-slo", a duration such
// as "250ms"), in milliseconds; 0 when none was.
func sloMs(f *result.File) float64 {
	d, err := time.ParseDuration(strings.TrimSpace(f.Config["p99-slo"]))
	if err != nil || d <= 0 {
		return 0
	}
	return float64(d) / float64(time.Millisecond)
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
	sansSerif(p)
	return p
}

// nearData is an axis range around the data [lo, hi]: 5 % of the span (or of the value)
// on each side, not below 0 for data that is not, so the axis starts near the data rather
// than at 0 and the differences that matter fill the plot.
func nearData(lo, hi float64) (float64, float64) {
	if lo > hi {
		return 0, 1
	}
	pad := (hi - lo) * 0.05
	if pad == 0 {
		pad = math.Max(math.Abs(hi)*0.05, 1)
	}
	min := lo - pad
	if lo >= 0 && min < 0 {
		min = 0
	}
	return min, hi + pad
}

// kneeLabels writes the knees' labels beside their rings, each moved down (or up) until it
// overlaps no other label, and kept within the data area.
type kneeLabels struct {
	at     []plotter.XY
	labels []string
	colors []color.Color
}

func (k *kneeLabels) add(at plotter.XY, label string, col color.Color) {
	k.at, k.labels, k.colors = append(k.at, at), append(k.labels, label), append(k.colors, col)
}

func (k *kneeLabels) style(i int) text.Style {
	sty := text.Style{Font: font.From(sansFont, 11), Color: k.colors[i], XAlign: draw.XLeft, YAlign: draw.YBottom,
		Handler: plot.DefaultTextHandler}
	return sty
}

// layout places the labels on the data canvas c: to the right of and below each knee (to
// its left when that runs off the plot), moved past the labels placed before it.
func (k *kneeLabels) layout(c draw.Canvas, p *plot.Plot) []vg.Rectangle {
	trX, trY := p.Transforms(&c)
	const gap = vg.Length(10)
	var placed []vg.Rectangle
	for i, at := range k.at {
		size := k.style(i).Rectangle(k.labels[i]).Size()
		x := trX(at.X) + gap
		if x+size.X > c.Max.X {
			x = trX(at.X) - gap - size.X
		}
		x = max(x, c.Min.X)
		y := trY(at.Y) - gap - size.Y
		r := vg.Rectangle{Min: vg.Point{X: x, Y: y}, Max: vg.Point{X: x + size.X, Y: y + size.Y}}
		step := -(size.Y + 2)
		for tries := 0; tries < 2*len(placed)+2 && (overlapsAny(r, placed) || r.Min.Y < c.Min.Y || r.Max.Y > c.Max.Y); tries++ {
			if r.Min.Y+step < c.Min.Y { // no room below: go up from the knee instead
				step = size.Y + 2
				r = vg.Rectangle{Min: vg.Point{X: x, Y: trY(at.Y) + gap}, Max: vg.Point{X: x + size.X, Y: trY(at.Y) + gap + size.Y}}
				continue
			}
			r.Min.Y += step
			r.Max.Y += step
		}
		placed = append(placed, r)
	}
	return placed
}

func overlapsAny(r vg.Rectangle, others []vg.Rectangle) bool {
	for _, o := range others {
		if r.Min.X < o.Max.X && o.Min.X < r.Max.X && r.Min.Y < o.Max.Y && o.Min.Y < r.Max.Y {
			return true
		}
	}
	return false
}

// Plot draws the labels (plot.Plotter).
func (k *kneeLabels) Plot(c draw.Canvas, p *plot.Plot) {
	for i, r := range k.layout(c, p) {
		c.FillText(k.style(i), r.Min, k.labels[i])
	}
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
	u := result.RateUnit(workload)
	p := newPlot(workload+": achieved vs offered rate", "offered rate ("+u+")", "achieved rate ("+u+")")
	p.X.Tick.Marker, p.Y.Tick.Marker = rateTicks{}, rateTicks{}
	minRate, maxRate := math.Inf(1), 0.0
	for _, s := range sweeps {
		for _, pr := range s.Probes {
			minRate, maxRate = min(minRate, pr.TargetRate, pr.AchievedRate), max(maxRate, pr.TargetRate, pr.AchievedRate)
		}
	}
	if math.IsInf(minRate, 1) {
		minRate = 0
	}
	diag, err := plotter.NewLine(plotter.XYs{{X: minRate, Y: minRate}, {X: maxRate, Y: maxRate}})
	if err != nil {
		return Chart{}, fmt.Errorf("chart achieved %s: %w", workload, err)
	}
	diag.Color, diag.Dashes = grey, []vg.Length{vg.Points(4), vg.Points(4)}
	p.Add(diag)
	p.Legend.Add("achieved = offered", diag)
	knees := &kneeLabels{}
	failedShown := false
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
		if err := addLinePoints(p, all, col, "sync="+string(s.SyncCommit), nil); err != nil {
			return Chart{}, fmt.Errorf("chart achieved %s: %w", workload, err)
		}
		if err := markFailed(p, fails, !failedShown); err != nil {
			return Chart{}, fmt.Errorf("chart achieved %s: %w", workload, err)
		}
		failedShown = failedShown || len(fails) > 0
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
				minRate, maxRate = min(minRate, iv.Lo), max(maxRate, iv.Hi)
			}
			if err := markKnee(p, knees, at, col, fmt.Sprintf("knee sync=%s: %s", s.SyncCommit, kneeWithInterval(s, unit(s.Workload)))); err != nil {
				return Chart{}, fmt.Errorf("chart achieved %s: %w", workload, err)
			}
		}
	}
	p.Add(knees)
	p.X.Min, p.X.Max = nearData(minRate, math.Max(maxRate, 1))
	p.Y.Min, p.Y.Max = p.X.Min, p.X.Max
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

// markKnee rings the knee and queues its label in labels (drawn last, clear of the others).
func markKnee(p *plot.Plot, labels *kneeLabels, at plotter.XY, col color.Color, label string) error {
	ring, err := plotter.NewScatter(plotter.XYs{at})
	if err != nil {
		return err
	}
	ring.GlyphStyle = draw.GlyphStyle{Color: col, Radius: vg.Points(9), Shape: draw.RingGlyph{}}
	p.Add(ring)
	labels.add(at, label, col)
	return nil
}

// markFailed crosses the failed probes, with a legend entry when legend is set.
func markFailed(p *plot.Plot, fails plotter.XYs, legend bool) error {
	if len(fails) == 0 {
		return nil
	}
	sc, err := plotter.NewScatter(fails)
	if err != nil {
		return err
	}
	sc.GlyphStyle = draw.GlyphStyle{Color: failMark, Radius: vg.Points(6), Shape: draw.CrossGlyph{}}
	p.Add(sc)
	if legend {
		p.Legend.Add("failed probe", sc)
	}
	return nil
}

// refLine draws a horizontal reference line at y across the plot, named in the legend.
func refLine(p *plot.Plot, y float64, col color.Color, name string) {
	l := plotter.NewFunction(func(float64) float64 { return y })
	l.Color, l.Width, l.Dashes = col, vg.Points(1.5), []vg.Length{vg.Points(8), vg.Points(4)}
	p.Add(l)
	p.Legend.Add(name, l)
}

// latencyChart: p50 (dashed) and p99 (solid) against offered rate, log scale, per sweep;
// failed probes crossed, the knee ringed, the pool wait and the p99 SLO (when the
// command set one) as reference lines.
func latencyChart(workload string, sweeps []*result.Sweep, sloMs float64) (Chart, error) {
	p := newPlot(workload+": latency vs offered rate (intended start to commit)", "offered rate ("+result.RateUnit(workload)+")", "latency (ms, log scale)")
	p.Y.Scale = plot.LogScale{}
	p.X.Tick.Marker = rateTicks{}
	p.Y.Tick.Marker = plot.LogTicks{Prec: -1}
	pos := func(v float64) float64 { return math.Max(v, 0.01) }
	knees := &kneeLabels{}
	failedShown := false
	var poolWait float64
	for i, s := range sweeps {
		col := sweepColor(s, i)
		var p50, p99, fails plotter.XYs
		for _, pr := range byRate(s) {
			poolWait = max(poolWait, pr.PoolWaitMs)
			if pr.Latency.Count == 0 && pr.Committed == 0 {
				continue
			}
			p50 = append(p50, plotter.XY{X: pr.TargetRate, Y: pos(pr.Latency.P50)})
			p99 = append(p99, plotter.XY{X: pr.TargetRate, Y: pos(pr.Latency.P99)})
			if failing(pr) {
				fails = append(fails, p99[len(p99)-1])
			}
		}
		if err := addLinePoints(p, p99, col, "p99 sync="+string(s.SyncCommit), nil); err != nil {
			return Chart{}, fmt.Errorf("chart latency %s: %w", workload, err)
		}
		if err := addLinePoints(p, p50, col, "p50 sync="+string(s.SyncCommit), []vg.Length{vg.Points(5), vg.Points(3)}); err != nil {
			return Chart{}, fmt.Errorf("chart latency %s: %w", workload, err)
		}
		if err := markFailed(p, fails, !failedShown); err != nil {
			return Chart{}, fmt.Errorf("chart latency %s: %w", workload, err)
		}
		failedShown = failedShown || len(fails) > 0
		if k := kneeProbe(s); k != nil {
			if err := markKnee(p, knees, plotter.XY{X: k.TargetRate, Y: pos(k.Latency.P99)}, col, "knee sync="+string(s.SyncCommit)); err != nil {
				return Chart{}, fmt.Errorf("chart latency %s: %w", workload, err)
			}
		}
	}
	p.Add(knees)
	// A log axis needs a positive range, also when no probe committed anything.
	lo, hi := math.Inf(1), math.Inf(-1)
	xlo, xhi := math.Inf(1), 0.0
	for _, s := range sweeps {
		for _, pr := range s.Probes {
			xlo, xhi = min(xlo, pr.TargetRate), max(xhi, pr.TargetRate)
			if pr.Latency.Count > 0 || pr.Committed > 0 {
				lo, hi = math.Min(lo, pos(pr.Latency.P50)), math.Max(hi, pos(pr.Latency.P99))
			}
		}
	}
	if math.IsInf(lo, 0) || math.IsInf(hi, 0) {
		lo, hi = 1, 1000
	}
	c := Chart{Name: slug("latency", workload), Width: chartWidth, Height: chartHeight}
	if poolWait > 0 {
		refLine(p, poolWait, okBlack, "pool wait "+ms(poolWait)+" ms")
		c.refs = append(c.refs, "pool wait")
		hi = max(hi, poolWait)
	}
	if sloMs > 0 {
		refLine(p, sloMs, okPurple, "p99 SLO "+ms(sloMs)+" ms")
		c.refs = append(c.refs, "p99 SLO")
		lo, hi = min(lo, sloMs), max(hi, sloMs)
	}
	p.Y.Min, p.Y.Max = lo/1.5, hi*1.5
	if math.IsInf(xlo, 1) {
		xlo = 0
	}
	p.X.Min, p.X.Max = nearData(xlo, math.Max(xhi, 1))
	c.Title, c.Panels = p.Title.Text, [][]*plot.Plot{{p}}
	return c, nil
}

// timelineChart: a probe's per-second series, rates on top and p99 below, warm-up marked.
func timelineChart(s *result.Sweep, pr *result.Probe, kind, label string) (Chart, error) {
	title := fmt.Sprintf("%s: %s, %s%s offered (%s)", sweepName(s), label, rate(pr.TargetRate), unit(s.Workload), orDash(string(pr.Verdict)))
	top := newPlot(title, "", "per second ("+result.RateUnit(s.Workload)+")")
	bottom := newPlot("", "time since probe start (s)", "p99 latency (ms)")
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
	}{{offered, grey, "offered", []vg.Length{vg.Points(4), vg.Points(3)}}, {committed, okBlue, "committed", nil}, {errs, red, "failed + rejected", nil}} {
		if err := addLinePoints(top, l.xys, l.col, l.name, l.dashes); err != nil {
			return Chart{}, fmt.Errorf("chart timeline: %w", err)
		}
	}
	if err := addLinePoints(bottom, p99, okPurple, "p99 latency", nil); err != nil {
		return Chart{}, fmt.Errorf("chart timeline: %w", err)
	}
	if err := addLinePoints(bottom, queue, okGreen, "queue wait p99", []vg.Length{vg.Points(4), vg.Points(3)}); err != nil {
		return Chart{}, fmt.Errorf("chart timeline: %w", err)
	}
	if warmEnd > 0 {
		for _, p := range []*plot.Plot{top, bottom} {
			_, _, _, ymax := plotter.XYRange(offered)
			if p == bottom {
				_, _, _, ymax = plotter.XYRange(p99)
			}
			l, err := plotter.NewLine(plotter.XYs{{X: warmEnd, Y: 0}, {X: warmEnd, Y: ymax * 1.05}})
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
	// The axes start near the data: the per-second rates' dips and the latency's rise
	// fill the panels.
	top.Y.Min, top.Y.Max = nearData(seriesRange(offered, committed, errs))
	bottom.Y.Min, bottom.Y.Max = nearData(seriesRange(p99, queue))
	for _, p := range []*plot.Plot{top, bottom} {
		p.X.Min, p.X.Max = 0, math.Max(float64(len(pr.Series)), 1)
	}
	return Chart{Name: slug("timeline", s.Workload, "sync", string(s.SyncCommit), kind), Title: title,
		Panels: [][]*plot.Plot{{top}, {bottom}}, Width: chartWidth, Height: chartHeight}, nil
}

// seriesRange is the lowest and highest y of the series.
func seriesRange(series ...plotter.XYs) (lo, hi float64) {
	lo, hi = math.Inf(1), math.Inf(-1)
	for _, xys := range series {
		for _, xy := range xys {
			lo, hi = min(lo, xy.Y), max(hi, xy.Y)
		}
	}
	if lo > hi {
		return 0, 1
	}
	return lo, hi
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
	p := newPlot(title, "offered rate ("+result.RateUnit(s.Workload)+")", "share of active samples (%)")
	c := Chart{Name: slug("waits", s.Workload, "sync", string(s.SyncCommit)), Title: title,
		Width: chartWidth, Height: chartHeight, series: map[string]color.Color{}}
	width := vg.Points(math.Max(8, math.Min(40, 500/float64(len(probes)))))
	var below *plotter.BarChart
	for i, e := range events {
		b, err := plotter.NewBarChart(values[i], width)
		if err != nil {
			return Chart{}, false, fmt.Errorf("chart waits %s: %w", sweepName(s), err)
		}
		b.Color = waitColor(e)
		c.series[e] = b.Color
		b.LineStyle.Width = 0
		if below != nil {
			b.StackOn(below)
		}
		below = b
		p.Add(b)
		p.Legend.Add(e, b)
	}
	p.NominalX(names...)
	p.Y.Min, p.Y.Max = 0, 100 // shares: the whole scale is the point
	c.Panels = [][]*plot.Plot{{p}}
	return c, true, nil
}
