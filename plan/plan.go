package plan

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/pgceiling/pgceiling/result"
)

// Options is what the user knows that the results file does not.
type Options struct {
	// Current is today's average rate of the workload's transactions, in tx/s (rows/s for
	// copy, whose arrivals are rows: result.RateUnit).
	Current float64
	// PeakFactor multiplies Current into today's peak (default 1 when 0).
	PeakFactor float64
	// Growth is the traffic's growth per year as a fraction (0.4 = 40 %/year), compounding.
	Growth float64
	// Workloads limits the plan to these workloads (empty: every workload in the file).
	Workloads []string
	// Now is the day the dates count from.
	Now time.Time
	// Source names the results file in the output.
	Source string
}

// Plan is the capacity plan of one results file: its JSON form is what `plan --json`
// writes.
type Plan struct {
	PlanVersion   int        `json:"plan_version"` // Version
	Tool          string     `json:"tool"`
	ToolVersion   string     `json:"tool_version"`
	Source        string     `json:"source"`
	RunID         string     `json:"run_id,omitempty"`
	Server        string     `json:"server_version,omitempty"`
	From          string     `json:"from"` // the day the dates count from, YYYY-MM-DD
	CurrentTxS    float64    `json:"current_tx_s"`
	PeakFactor    float64    `json:"peak_factor"`
	PeakTxS       float64    `json:"peak_tx_s"`
	GrowthPerYear float64    `json:"growth_per_year"` // fraction, compounding
	Workloads     []Workload `json:"workloads"`
}

// Range is an estimate with its interval's ends (Lo, Hi equal Value when there is no
// interval).
type Range struct {
	Value float64 `json:"value"`
	Lo    float64 `json:"lo"`
	Hi    float64 `json:"hi"`
}

// Workload is the plan of one workload.
type Workload struct {
	Workload   string            `json:"workload"`
	SyncCommit result.SyncCommit `json:"sync_commit"` // of the knee planned against
	// Unit is the unit of the workload's rates (result.RateUnit): tx/s, or rows/s for
	// copy, whose arrivals are rows. The fields named _tx_s hold rates in this unit.
	Unit string `json:"unit"`
	// Knee is the knee planned against, with its interval (Level 0: none in the file).
	Knee  Range   `json:"knee_tx_s"`
	Level float64 `json:"interval_level,omitempty"`
	// Headroom is knee / today's peak - 1 (negative: the peak is already past the knee).
	Headroom Range `json:"headroom"`
	// Reach is when the growing peak reaches the knee.
	Reach Reach `json:"reach"`
	// Bottleneck is the sweep's bottleneck line, naming the probe rate it describes.
	Bottleneck string `json:"bottleneck,omitempty"`
	// Limit is the bottleneck's kind: hot_row_lock, wal_io, cpu, client or unattributed.
	Limit   Limit     `json:"limit"`
	Levers  []Lever   `json:"levers"`
	Shards  *Sharding `json:"sharding,omitempty"`
	Missing string    `json:"missing,omitempty"` // why nothing could be planned (no knee)
}

// Reach is when today's peak, growing at the given rate, reaches the knee: Earliest from
// the interval's low end, Latest from its high end. Status is ahead (it will, on those
// dates), past (already at or over the whole interval), partly_past (over the low end,
// under the high end) or never (no growth).
type Reach struct {
	Status   string  `json:"status"`
	Years    float64 `json:"years,omitempty"`
	YearsLo  float64 `json:"years_lo,omitempty"`
	YearsHi  float64 `json:"years_hi,omitempty"`
	Date     string  `json:"date,omitempty"` // YYYY-MM
	Earliest string  `json:"earliest,omitempty"`
	Latest   string  `json:"latest,omitempty"`
}

// Reach statuses.
const (
	ReachAhead      = "ahead"
	ReachPast       = "past"
	ReachPartlyPast = "partly_past"
	ReachNever      = "never"
)

// Lever is one measured way to move the knee.
type Lever struct {
	Name  string `json:"name"` // synchronous_commit or conns
	Text  string `json:"text"`
	Ratio *Range `json:"ratio,omitempty"` // the knee's factor, e.g. sync off / on
}

// Version is the version of the plan's JSON (plan --json), apart from the results file's.
const Version = 1

// ErrNoKnees is returned when the file has no sweep with a knee to plan against.
var ErrNoKnees = errors.New("no knee to plan against")

// Make builds the plan of f for o.
func Make(f *result.File, o Options) (*Plan, error) {
	if !(o.Current > 0) || math.IsInf(o.Current, 0) {
		return nil, fmt.Errorf("the current rate must be > 0, got %v", o.Current)
	}
	if o.PeakFactor == 0 {
		o.PeakFactor = 1
	}
	p := &Plan{PlanVersion: Version, Tool: "pgceiling", ToolVersion: result.ToolVersion, Source: o.Source, RunID: f.RunID, From: o.Now.Format("2006-01-02"), CurrentTxS: o.Current,
		PeakFactor: o.PeakFactor, PeakTxS: o.Current * o.PeakFactor, GrowthPerYear: o.Growth}
	if f.Server != nil {
		p.Server = f.Server.Version
	}
	sweeps := kneeSweeps(f)
	var names []string
	for _, s := range sweeps {
		if !slices.Contains(names, s.Workload) {
			names = append(names, s.Workload)
		}
	}
	for _, w := range o.Workloads {
		if !slices.Contains(names, w) {
			return nil, fmt.Errorf("%s has no sweep of workload %q (it has: %s)", o.Source, w, strings.Join(names, ", "))
		}
	}
	if len(o.Workloads) > 0 {
		names = o.Workloads
	}
	knees := 0
	for _, name := range names {
		w := planWorkload(sweeps, name, p, o)
		if w.Missing == "" {
			knees++
		}
		p.Workloads = append(p.Workloads, w)
	}
	if knees == 0 {
		return p, fmt.Errorf("%s: %w (is it a search's results file, or a claim's with --find-knee? a run has none)", o.Source, ErrNoKnees)
	}
	return p, nil
}

// kneeSweeps are the sweeps of f that may have a knee: a search's, or the short searches
// of a claim run with --find-knee (its own sweeps are single probes at the claimed rate).
func kneeSweeps(f *result.File) []result.Sweep {
	if f.Claim == nil {
		return f.Sweeps
	}
	var out []result.Sweep
	for _, sh := range f.Claim.Shapes {
		if sh.KneeSweep != nil {
			out = append(out, *sh.KneeSweep)
		}
	}
	return out
}

// sweepsOf returns the workload's sweep with synchronous_commit on and off (nil when
// missing or without a knee).
func sweepsOf(sweeps []result.Sweep, name string) (on, off *result.Sweep) {
	for i := range sweeps {
		s := &sweeps[i]
		if s.Workload != name || s.Knee <= 0 {
			continue
		}
		switch s.SyncCommit {
		case result.SyncOn:
			on = s
		case result.SyncOff:
			off = s
		}
	}
	return on, off
}

func planWorkload(sweeps []result.Sweep, name string, p *Plan, o Options) Workload {
	w := Workload{Workload: name, Unit: result.RateUnit(name)}
	on, off := sweepsOf(sweeps, name)
	s := on
	if s == nil {
		s = off
	}
	if s == nil {
		w.Missing = "no sweep of " + name + " found a knee"
		return w
	}
	w.SyncCommit = s.SyncCommit
	w.Knee = kneeRange(s)
	if s.Interval != nil {
		w.Level = s.Interval.Level
	}
	w.Headroom = Range{Value: w.Knee.Value/p.PeakTxS - 1, Lo: w.Knee.Lo/p.PeakTxS - 1, Hi: w.Knee.Hi/p.PeakTxS - 1}
	w.Reach = reach(p.PeakTxS, w.Knee, o.Growth, o.Now)
	w.Bottleneck, w.Limit = bottleneck(s)
	w.Levers = levers(s, on, off, w.Unit)
	w.Shards = sharding(s, &w)
	return w
}

// kneeRange is the sweep's knee with its interval; without one, Lo = Hi = the knee. The
// interval is widened to hold the knee itself, so Lo <= Value <= Hi.
func kneeRange(s *result.Sweep) Range {
	r := Range{Value: s.Knee, Lo: s.Knee, Hi: s.Knee}
	if iv := s.Interval; iv != nil && iv.Lo > 0 && iv.Hi >= iv.Lo {
		r.Lo, r.Hi = math.Min(iv.Lo, s.Knee), math.Max(iv.Hi, s.Knee)
	}
	return r
}

// yearsTo is how many years a peak growing at growth per year (compounding) takes to
// reach knee: ln(knee/peak) / ln(1+growth); 0 when it already has, +Inf when it never will.
func yearsTo(peak, knee, growth float64) float64 {
	if peak >= knee {
		return 0
	}
	if growth <= 0 {
		return math.Inf(1)
	}
	return math.Log(knee/peak) / math.Log1p(growth)
}

// dateAfter is now plus years, as YYYY-MM.
func dateAfter(now time.Time, years float64) string {
	months := years * 12
	whole := math.Floor(months)
	days := (months - whole) * 365.25 / 12
	return now.AddDate(0, int(whole), 0).Add(time.Duration(days * 24 * float64(time.Hour))).Format("2006-01")
}

func reach(peak float64, knee Range, growth float64, now time.Time) Reach {
	lo, mid, hi := yearsTo(peak, knee.Lo, growth), yearsTo(peak, knee.Value, growth), yearsTo(peak, knee.Hi, growth)
	switch {
	case hi == 0:
		return Reach{Status: ReachPast}
	case math.IsInf(lo, 1):
		return Reach{Status: ReachNever}
	}
	r := Reach{Status: ReachAhead, Years: mid, YearsLo: lo, YearsHi: hi, Date: dateAfter(now, mid),
		Earliest: dateAfter(now, lo), Latest: dateAfter(now, hi)}
	if lo == 0 {
		r.Status = ReachPartlyPast
	}
	return r
}

// levers lists the measured ways to move the knee: synchronous_commit (the off/on knee
// ratio as a range from both intervals) and the connection count when the sweep's
// probes used several.
func levers(s, on, off *result.Sweep, unit string) []Lever {
	var out []Lever
	if on != nil && off != nil {
		a, b := kneeRange(on), kneeRange(off)
		r := Range{Value: b.Value / a.Value, Lo: b.Lo / a.Hi, Hi: b.Hi / a.Lo}
		text := fmt.Sprintf("synchronous_commit off moves the knee %s (%s-%s): %s vs %s %s; a crash may then lose the last commits (up to 3 × wal_writer_delay), never corrupt data",
			times(r.Value), times2(r.Lo), times2(r.Hi), rate(b.Value), rate(a.Value), unit)
		if a.Lo == a.Hi && b.Lo == b.Hi {
			text = fmt.Sprintf("synchronous_commit off moves the knee %s: %s vs %s %s (no intervals in the file); a crash may then lose the last commits (up to 3 × wal_writer_delay), never corrupt data",
				times(r.Value), rate(b.Value), rate(a.Value), unit)
		}
		out = append(out, Lever{Name: "synchronous_commit", Text: text, Ratio: &r})
	} else {
		other := result.SyncOff
		if s.SyncCommit == result.SyncOff {
			other = result.SyncOn
		}
		out = append(out, Lever{Name: "synchronous_commit",
			Text: fmt.Sprintf("synchronous_commit: not measured (no %s sweep with a knee; search --sync-commit on,off measures it)", other)})
	}
	out = append(out, connsLever(s, unit))
	return out
}

// poolScanText is the connections lever of a sweep whose pool was chosen by the pool
// scan (--conns auto): the saturated throughput per pool size it measured.
func poolScanText(ps *result.PoolScan, unit string) string {
	parts := make([]string, len(ps.Points))
	worst := ps.Points[0]
	for i, pt := range ps.Points {
		parts[i] = fmt.Sprintf("%d → %s %s", pt.Conns, rate(pt.Achieved), unit)
		if pt.Achieved < worst.Achieved {
			worst = pt
		}
	}
	t := fmt.Sprintf("connections: every probe used %d, chosen by the pool scan (--conns auto); throughput with every connection busy by pool size: %s",
		ps.Conns, strings.Join(parts, ", "))
	var best result.PoolPoint
	for _, pt := range ps.Points {
		if pt.Conns == ps.Best {
			best = pt
		}
	}
	if worst.Conns > best.Conns && best.Achieved > 0 {
		t += fmt.Sprintf("; a pool of %d gets %.0f %% less: an application with a larger pool (or without a pooler in front) sees a lower ceiling",
			worst.Conns, 100*(1-worst.Achieved/best.Achieved))
	}
	return t
}

// connsLever says what the connection count did: the highest passing rate per pool
// size when the probes used several, else that it was not varied.
func connsLever(s *result.Sweep, unit string) Lever {
	best := map[int]float64{}
	var sizes []int
	for _, p := range s.Probes {
		if p.Conns <= 0 {
			continue
		}
		if _, ok := best[p.Conns]; !ok {
			sizes = append(sizes, p.Conns)
			best[p.Conns] = 0
		}
		if p.Verdict == result.Pass {
			best[p.Conns] = math.Max(best[p.Conns], p.TargetRate)
		}
	}
	slices.Sort(sizes)
	switch len(sizes) {
	case 0:
		return Lever{Name: "conns", Text: "connections: not recorded"}
	case 1:
		if ps := s.Pool; ps != nil && ps.Conns == sizes[0] && len(ps.Points) > 1 {
			return Lever{Name: "conns", Text: poolScanText(ps, unit)}
		}
		return Lever{Name: "conns", Text: fmt.Sprintf("connections: every probe used %d (not varied; a search per --conns measures it)", sizes[0])}
	}
	parts := make([]string, len(sizes))
	for i, n := range sizes {
		parts[i] = fmt.Sprintf("%d → %s %s", n, rate(best[n]), unit)
	}
	return Lever{Name: "conns", Text: "connections: highest passing rate by pool size: " + strings.Join(parts, ", ")}
}
