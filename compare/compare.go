// Package compare sets two results files side by side (`pgceiling compare A B`): per
// sweep the knee, its interval and bracket, the p99 at the knee and the bottleneck (for
// run files the probe's rates, errors and p99), the settings and configuration that
// differ, and the regressions past the gates a pipeline sets (--fail-if-knee-drops,
// --fail-if-p99-rises). It renders plain text fitted to a width; the overlay charts are
// report's.
package compare

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/pgceiling/pgceiling/result"
)

// Options are the regression gates: a negative share is no gate.
type Options struct {
	// KneeDrop fails the comparison when B's knee (a run's achieved rate) is lower than
	// A's by more than this share (0.1 = 10 %), or missing.
	KneeDrop float64
	// P99Rise fails it when B's p99 at the knee (a run's p99) is higher than A's by more
	// than this share.
	P99Rise float64
}

// NoGates is Options without any gate.
var NoGates = Options{KneeDrop: -1, P99Rise: -1}

// Side is one file's figures for one sweep.
type Side struct {
	Found bool
	// Rate is the knee (search; 0 when none passed) or the achieved rate (run), in the
	// workload's unit (result.RateUnit: tx/s, rows/s for copy).
	Rate       float64
	Target     float64 // run: the offered rate
	Interval   *result.Interval
	Bracket    result.Bracket
	P99Ms      float64 // at the knee (search) or of the probe (run); 0 = none
	ErrorRate  float64 // run
	Probes     int
	Bottleneck string
	// FlushMs is the storage's mean WAL flush time at the knee (search, result.Sweep.FlushMs)
	// or over the probe (run), ms per sync; 0 when not recorded.
	FlushMs float64
}

// Row is one sweep (workload and synchronous_commit setting) in both files.
type Row struct {
	Workload   string
	SyncCommit result.SyncCommit
	A, B       Side
	// RateChange and P99Change are (B - A) / A; NaN when either side has no figure.
	RateChange float64
	P99Change  float64
	// Overlap: both knees have intervals and they overlap (the change may be noise).
	Overlap, HaveIntervals bool
	// Repeatable: both intervals record where a repeat's estimate lands (HaveRepeats,
	// result.Interval.RepeatLo) and each run's estimate lies inside the other's: what two
	// runs of an unchanged server do 9 times in 10 with 90 % intervals.
	Repeatable, HaveRepeats bool
	// Broken lists the gates this row broke, one line each.
	Broken []string
}

// Difference is one setting or configuration value that differs between the files.
type Difference struct {
	What string
	A, B string
}

// Comparison is two results files side by side.
type Comparison struct {
	Kind         string // search or run
	NameA, NameB string
	FileA, FileB *result.File
	Rows         []Row
	Differences  []Difference
	Options      Options
	// Broken lists every gate broken, "workload sync=x: ..." one line each.
	Broken []string
}

// Compare sets a and b (named nameA and nameB in the text) side by side and applies the
// gates. Both must be files of the same command.
func Compare(a, b *result.File, nameA, nameB string, opt Options) (*Comparison, error) {
	if a.Command != b.Command {
		return nil, fmt.Errorf("%s is a results file of %s and %s one of %s: compare like with like", nameA, a.Command, nameB, b.Command)
	}
	c := &Comparison{Kind: a.Command, NameA: nameA, NameB: nameB, FileA: a, FileB: b, Options: opt}
	type key struct {
		w string
		s result.SyncCommit
	}
	var keys []key
	seen := map[key]bool{}
	for _, f := range []*result.File{a, b} {
		for _, s := range f.Sweeps {
			k := key{s.Workload, s.SyncCommit}
			if !seen[k] {
				seen[k] = true
				keys = append(keys, k)
			}
		}
	}
	for _, k := range keys {
		r := Row{Workload: k.w, SyncCommit: k.s, A: side(a, k.w, k.s), B: side(b, k.w, k.s)}
		r.RateChange, r.P99Change = change(r.A.Rate, r.B.Rate), change(r.A.P99Ms, r.B.P99Ms)
		if ia, ib := r.A.Interval, r.B.Interval; ia != nil && ib != nil {
			r.HaveIntervals, r.Overlap = true, ia.Overlaps(ib)
			if ia.HasRepeat() && ib.HasRepeat() {
				r.HaveRepeats = true
				r.Repeatable = ia.RepeatContains(ib.Midpoint) && ib.RepeatContains(ia.Midpoint)
			}
		}
		r.Broken = gates(&r, c.Kind, opt)
		for _, br := range r.Broken {
			c.Broken = append(c.Broken, fmt.Sprintf("%s sync=%s: %s", r.Workload, r.SyncCommit, br))
		}
		c.Rows = append(c.Rows, r)
	}
	c.Differences = differences(a, b)
	return c, nil
}

// side is file f's figures for the sweep (w, s).
func side(f *result.File, w string, s result.SyncCommit) Side {
	sw := f.Sweep(result.SweepKey{Workload: w, SyncCommit: s})
	if sw == nil {
		return Side{}
	}
	out := Side{Found: true, Probes: len(sw.Probes), Bottleneck: sw.Bottleneck}
	if singleProbes(f.Command) && len(sw.Probes) > 0 {
		p := &sw.Probes[len(sw.Probes)-1]
		out.Rate, out.Target, out.P99Ms, out.ErrorRate = p.AchievedRate, p.TargetRate, p.Latency.P99, p.ErrorRate()
		if p.Observation != nil {
			if out.Bottleneck == "" {
				out.Bottleneck = p.Observation.Bottleneck
			}
			out.FlushMs = p.Observation.WAL.MsPerSync()
		}
		return out
	}
	out.Rate, out.Interval, out.Bracket, out.FlushMs = sw.Knee, sw.Interval, sw.Bracket, sw.FlushMs()
	if k := sw.KneeProbe(); k != nil {
		out.P99Ms = k.Latency.P99
	}
	return out
}

// singleProbes reports whether a command's sweeps are single probes at a given rate (run,
// and claim at the claimed rate), compared by their achieved rates, not by knees.
func singleProbes(command string) bool { return command == "run" || command == "claim" }

// change is (b - a) / a, NaN when either is missing (0).
func change(a, b float64) float64 {
	if a <= 0 || b <= 0 {
		return math.NaN()
	}
	return (b - a) / a
}

// gates returns the gates row r breaks.
func gates(r *Row, kind string, opt Options) []string {
	var out []string
	what, u := "knee", result.RateUnit(r.Workload)
	if singleProbes(kind) {
		what = "achieved rate"
	}
	if opt.KneeDrop >= 0 && r.A.Found && r.A.Rate > 0 {
		switch {
		case !r.B.Found:
			out = append(out, fmt.Sprintf("missing from B (the %s cannot be compared; --fail-if-knee-drops)", what))
		case r.B.Rate <= 0:
			out = append(out, fmt.Sprintf("no %s in B, %s %s in A (--fail-if-knee-drops %s)", what, rate(r.A.Rate), u, share(opt.KneeDrop)))
		case -r.RateChange > opt.KneeDrop:
			out = append(out, fmt.Sprintf("%s dropped %s, %s -> %s %s (--fail-if-knee-drops %s)",
				what, share(-r.RateChange), rate(r.A.Rate), rate(r.B.Rate), u, share(opt.KneeDrop)))
		}
	}
	if opt.P99Rise >= 0 && !math.IsNaN(r.P99Change) && r.P99Change > opt.P99Rise {
		at := "p99 at the knee"
		if singleProbes(kind) {
			at = "p99"
		}
		out = append(out, fmt.Sprintf("%s rose %s, %s -> %s ms (--fail-if-p99-rises %s)",
			at, share(r.P99Change), ms(r.A.P99Ms), ms(r.B.P99Ms), share(opt.P99Rise)))
	}
	return out
}

// ignoredConfig are flags that say where output went, not how the figures were made.
var ignoredConfig = map[string]bool{"json": true, "resume": true, "report": true, "summary-json": true, "config": true,
	"progress": true, "quiet": true, "wide": true, "metrics-addr": true}

// differences lists what differs in the disclosures and configurations of a and b: the
// server's version and settings, the machines, the data's size, the tool's version and
// every flag that shapes the figures.
func differences(a, b *result.File) []Difference {
	var out []Difference
	add := func(what, va, vb string) {
		if va != vb {
			out = append(out, Difference{What: what, A: orDash(va), B: orDash(vb)})
		}
	}
	add("pgceiling version", a.ToolVersion, b.ToolVersion)
	da, db := a.Server, b.Server
	if da == nil {
		da = &result.Disclosure{}
	}
	if db == nil {
		db = &result.Disclosure{}
	}
	add("server version", da.Version, db.Version)
	for _, k := range unionKeys(da.Settings, db.Settings) {
		add(k, da.Settings[k], db.Settings[k])
	}
	add("data / shared_buffers", ratio(da.DataToSharedBuffers), ratio(db.DataToSharedBuffers))
	add("transactions rows", tableRows(da, "transactions"), tableRows(db, "transactions"))
	add("client cores", cores(da.ClientCores), cores(db.ClientCores))
	add("server cores", cores(da.ServerCores), cores(db.ServerCores))
	add("server", serverKind(da), serverKind(db))
	add("knee interval", intervalMethod(a), intervalMethod(b))
	for _, k := range unionKeys(a.Config, b.Config) {
		if !ignoredConfig[k] {
			add("--"+k, a.Config[k], b.Config[k])
		}
	}
	return out
}

// intervalMethod names how f's knee intervals were made, e.g. "collapse-rate model": the
// method's text up to its first colon or semicolon; "" without an interval. Intervals of
// two methods answer different questions, so their overlap is read with that in mind.
func intervalMethod(f *result.File) string {
	for i := range f.Sweeps {
		if iv := f.Sweeps[i].Interval; iv != nil && iv.Method != "" {
			m := iv.Method
			if j := strings.IndexAny(m, ":;"); j > 0 {
				m = m[:j]
			}
			return m
		}
	}
	return ""
}

func unionKeys(a, b map[string]string) []string {
	var keys []string
	for k := range a {
		keys = append(keys, k)
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	return keys
}

func tableRows(d *result.Disclosure, name string) string {
	for _, t := range d.Tables {
		if t.Name == name {
			return count(t.Rows)
		}
	}
	return ""
}

func ratio(v float64) string {
	if v <= 0 {
		return ""
	}
	return fmt.Sprintf("%.1fx", v)
}

func cores(n int) string {
	if n <= 0 {
		return ""
	}
	return fmt.Sprint(n)
}

func serverKind(d *result.Disclosure) string {
	switch {
	case d.Version == "":
		return ""
	case d.Embedded:
		return "embedded (throwaway)"
	case d.ServerLocal:
		return "local"
	default:
		return "remote"
	}
}

func orDash(s string) string {
	if strings.TrimSpace(s) == "" {
		return "-"
	}
	return s
}
