package report

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/pgceiling/pgceiling/result"
)

// table is one table of a report, rendered by every textual format alike.
type table struct {
	Title  string
	Header []string
	Rows   [][]string
	Notes  []string // lines printed after the table
	// Narrow says, per column, how the text report may narrow it to fit a terminal
	// (nil or a missing entry: keep it whole). Other formats show every cell whole.
	Narrow []narrowing
}

// narrowing is how a text table's column may be made narrower than its widest cell.
type narrowing int

const (
	keepWhole narrowing = iota // never narrowed
	wrapCell                   // cells wrap at their words onto more lines
	cutToNote                  // cells are cut short, the whole cell a numbered note under the table
)

// model is what a report says, independent of the format it is written in.
type model struct {
	Title      string
	Meta       []string // the command line, tool version, times
	Disclosure string   // one compact line, "" when the file has no disclosure
	Warnings   []string // printed first and last, loud
	Problems   []string // the file's error, an interruption
	Tables     []table
}

// kneeProbe returns the passing probe at the sweep's knee, or nil when none passed.
func kneeProbe(s *result.Sweep) *result.Probe {
	if s.Knee <= 0 {
		return nil
	}
	var found *result.Probe
	for i := range s.Probes {
		p := &s.Probes[i]
		if p.TargetRate == s.Knee && p.Verdict == result.Pass {
			found = p
		}
	}
	return found
}

// failing reports whether the search judged the probe a failure on the server's account
// (fail or not_steady); driver-limited and fault probes say nothing about the server.
func failing(p *result.Probe) bool { return p.Verdict == result.Fail || p.Verdict == result.NotSteady }

// firstFailing returns the failing probe at the lowest offered rate above the knee (the
// first rate the server could not hold, the rate the search's bottleneck line describes),
// or nil. A failure at or below the knee is left out: that rate's passes or its hold
// overruled it, and "errors at 2,275" beside "knee 2,275, held" read as a contradiction.
// With no knee, every failing probe counts.
func firstFailing(s *result.Sweep) *result.Probe {
	var found *result.Probe
	for i := range s.Probes {
		p := &s.Probes[i]
		if failing(p) && p.TargetRate > s.Knee && (found == nil || p.TargetRate < found.TargetRate) {
			found = p
		}
	}
	return found
}

// sweepName names a sweep in titles and legends.
func sweepName(s *result.Sweep) string {
	return fmt.Sprintf("%s sync=%s", s.Workload, s.SyncCommit)
}

// warnings gathers the file's and the disclosure's warnings, adding one for fsync=off
// when the disclosure or a probe shows it and nobody said so already.
func warnings(f *result.File) []string {
	var out []string
	seen := map[string]bool{}
	add := func(w string) {
		w = strings.TrimSpace(w)
		if w != "" && !seen[w] {
			seen[w] = true
			out = append(out, w)
		}
	}
	for _, w := range f.Warnings {
		add(w)
	}
	if f.Server != nil {
		for _, w := range f.Server.Warnings {
			add(w)
		}
	}
	fsyncOff := unsafeServer(f)
	for _, s := range f.Sweeps {
		var rates, stolen []string
		for _, p := range s.Probes {
			if p.Verdict == result.HostSteal {
				stolen = append(stolen, rate(p.TargetRate))
			}
			// A probe judged by its errors (fail) stands even when the driver was also
			// behind; only the verdict driver_limited (or an unjudged run) voids it.
			if p.Verdict == result.DriverLimited || (p.Verdict == "" && p.DriverLimited) {
				rates = append(rates, rate(p.TargetRate))
			}
		}
		if len(rates) > 0 {
			add(fmt.Sprintf("%s: the client, not the server, was the limit at %s%s: those probes say nothing about the server", sweepName(&s), strings.Join(rates, ", "), unit(s.Workload)))
		}
		if len(stolen) > 0 {
			add(fmt.Sprintf("%s: during the failing probes at %s%s the hypervisor gave other guests at least %.0f %% of this machine's CPU, or %.0f %% in the %d s before they broke down (steal): they were run again and are not counted; a knee measured on a machine with noisy neighbours is theirs too",
				sweepName(&s), strings.Join(stolen, ", "), unit(s.Workload), 100*result.StealLimit, 100*result.StealOnsetLimit, result.StealLeadS))
		}
	}
	if fsyncOff {
		mentioned := false
		for _, w := range out {
			if strings.Contains(strings.ToLower(w), "fsync") {
				mentioned = true
			}
		}
		if !mentioned {
			add("fsync=off on the server: commits are not durable and these figures overstate the real ceiling")
		}
	}
	return out
}

// unsafeServer reports whether the disclosure or any probe shows fsync=off.
func unsafeServer(f *result.File) bool {
	if f.Server != nil && strings.EqualFold(f.Server.Settings["fsync"], "off") {
		return true
	}
	for _, s := range f.Sweeps {
		for _, p := range s.Probes {
			if strings.EqualFold(p.Server.Fsync, "off") {
				return true
			}
		}
	}
	return false
}

// disclosureLine is the compact disclosure: version, durability settings, memory ratio.
func disclosureLine(d *result.Disclosure) string {
	if d == nil {
		return ""
	}
	parts := []string{"server " + orDash(d.Version)}
	for _, k := range []string{"fsync", "synchronous_commit", "full_page_writes", "wal_level", "shared_buffers", "max_wal_size", "checkpoint_timeout"} {
		if v, ok := d.Settings[k]; ok {
			parts = append(parts, k+"="+v)
		}
	}
	if d.DataToSharedBuffers > 0 {
		parts = append(parts, "data/shared_buffers="+num(d.DataToSharedBuffers, 1)+"x")
	}
	if d.ServerCores > 0 {
		parts = append(parts, fmt.Sprintf("server cores=%d", d.ServerCores))
	}
	if d.ClientCores > 0 {
		parts = append(parts, fmt.Sprintf("client cores=%d", d.ClientCores))
	}
	if d.Embedded {
		parts = append(parts, "embedded throwaway server")
	}
	if dist := d.Distribution; dist.Distributed() {
		parts = append(parts, fmt.Sprintf("distributed: citus %s on %d nodes%s", dist.Citus, dist.Nodes, distributedBy(dist)))
	}
	return strings.Join(parts, " · ")
}

// distributedBy names how transactions is sharded (" (transactions by wallet_id, 32
// shards)"), or nothing when it is not a Citus table.
func distributedBy(d *result.Distribution) string {
	for _, t := range d.Tables {
		if t.Name == "transactions" && t.Type == result.DistHash {
			return fmt.Sprintf(" (transactions by %s, %d shards)", t.Column, t.Shards)
		}
	}
	return ""
}

// buildModel turns a results file into what every textual format says. compact is for a
// terminal: the sweeps table leaves the knee's interval, the errors at the first failing
// rate and the bottleneck to notes under it, so that it fits 100 columns.
func buildModel(f *result.File, compact bool) model {
	m := model{Title: "pgceiling " + orDash(f.Command)}
	if len(f.CommandLine) > 0 {
		m.Meta = append(m.Meta, "command: "+strings.Join(f.CommandLine, " "))
	}
	when := f.StartedAt.UTC().Format(time.RFC3339)
	if !f.FinishedAt.IsZero() {
		when += " to " + f.FinishedAt.UTC().Format(time.RFC3339)
	}
	m.Meta = append(m.Meta, fmt.Sprintf("%s %s, %s", orDash(f.Tool), orDash(f.ToolVersion), when))
	m.Disclosure = disclosureLine(f.Server)
	m.Warnings = warnings(f)
	if f.Interrupted {
		m.Problems = append(m.Problems, "interrupted: the results are what was measured before the stop")
	}
	if f.Error != "" {
		m.Problems = append(m.Problems, "error: "+f.Error)
	}
	if len(f.Sweeps) == 0 {
		m.Problems = append(m.Problems, "no sweeps in this file: nothing was measured")
		return m
	}
	if f.Claim != nil {
		claimModel(&m, f)
		return m
	}
	if f.Command == "run" {
		for i := range f.Sweeps {
			for j := range f.Sweeps[i].Probes {
				m.Tables = append(m.Tables, runTables(&f.Sweeps[i].Probes[j])...)
			}
		}
		return m
	}
	if compact {
		m.Tables = append(m.Tables, sweepsTableCompact(f))
	} else {
		m.Tables = append(m.Tables, sweepsTable(f))
	}
	for i := range f.Sweeps {
		m.Tables = append(m.Tables, probesTable(&f.Sweeps[i]))
	}
	return m
}

// runTables describes one probe of a run: its books, then its latency.
func runTables(p *result.Probe) []table {
	var r figures
	r.books(p)
	r.checks(p)
	r.driver(p)
	r.context(p)
	kv := table{Title: fmt.Sprintf("Probe: %s sync=%s at %s%s", p.Workload, p.SyncCommit, rate(p.TargetRate), unit(p.Workload)),
		Header: []string{"figure", "value"}, Rows: r, Narrow: []narrowing{wrapCell, wrapCell}}
	lat := table{Title: "Latency (ms)", Header: []string{"", "p50", "p90", "p99", "p99.9", "max", "mean"},
		Narrow: []narrowing{wrapCell}}
	for _, l := range []struct {
		name string
		l    result.Latency
	}{{"response (intended start to commit)", p.Latency}, {"service (actual start to commit)", p.Service}, {"queue wait", p.QueueWait}} {
		lat.Rows = append(lat.Rows, []string{l.name, ms(l.l.P50), ms(l.l.P90), ms(l.l.P99), ms(l.l.P999), ms(l.l.Max), ms(l.l.Mean)})
	}
	return []table{kv, lat}
}

// figures are a run's figure/value rows.
type figures [][]string

func (r *figures) add(k, v string) { *r = append(*r, []string{k, v}) }

// books adds the probe's books: what was offered and what became of it.
func (r *figures) books(p *result.Probe) {
	r.add("target rate", rate(p.TargetRate)+unit(p.Workload))
	r.add("measured window", fmt.Sprintf("%s s of %s s (warm-up %s s)", num(p.MeasuredS, 1), num(p.DurationS, 1), num(p.WarmupS, 1)))
	r.add("scheduled", count(p.Scheduled))
	r.add("committed", count(p.Committed))
	r.add("failed", fmt.Sprintf("%s (%s)", count(p.Failed.Total()), classes(p.Failed)))
	r.add("rejected (pool_timeout)", count(p.Rejected))
	r.add("error rate", pct(p.ErrorRate()))
	r.add("achieved", fmt.Sprintf("%s%s (%s committed in the window, %s more in the drain)", rate(p.AchievedRate), unit(p.Workload), count(p.CommittedInWindow), count(p.DrainCommitted)))
	if c := p.Copy; c != nil {
		r.add("copy batches", fmt.Sprintf("%s batches/s, %s rows each on average, at most %s rows or %s ms of wait (closed full %s, by wait %s, at the end %s; failed %s)",
			rate(c.BatchRate), num(c.MeanRows, 1), count(int64(c.MaxRows)), num(c.MaxWaitMs, 0), count(c.ByRows), count(c.ByWait), count(c.ByFlush), count(c.Failed)))
	}
	if p.Retries > 0 {
		r.add("retries", count(p.Retries))
	}
}

// checks adds the probe's checks against the database.
func (r *figures) checks(p *result.Probe) {
	rows := "ok"
	if !p.Checks.RowsOK {
		rows = "MISMATCH"
	}
	rowsLine := fmt.Sprintf("%s (%s gained %s rows, %s committed", rows, orDash(p.Checks.Table), count(p.Checks.RowDelta), count(p.Checks.CommittedTotal))
	if p.Checks.Uncertain > 0 {
		rowsLine += fmt.Sprintf(", %s cancelled mid-commit", count(p.Checks.Uncertain))
	}
	if p.Checks.Table == "" {
		rowsLine = "not checked (custom script: no table gains one row per transaction"
	}
	r.add("check: rows", rowsLine+")")
	bal := "not checked"
	if p.Checks.BalanceOK != nil {
		bal = "ok (money conserved)"
		if !*p.Checks.BalanceOK {
			bal = fmt.Sprintf("MISMATCH (%s before, %s after)", p.Checks.BalanceBefore, p.Checks.BalanceAfter)
		}
	}
	r.add("check: balance", bal)
	for _, pr := range p.Checks.Problems {
		r.add("check problem", pr)
	}
}

// driver adds how the client did and how the probe ended.
func (r *figures) driver(p *result.Probe) {
	dl := "no"
	if p.DriverLimited {
		dl = "YES: the client, not the server, was the limit"
		if p.DriverLimitReason != "" {
			dl += " (" + p.DriverLimitReason + ")"
		}
	}
	r.add("driver limited", dl)
	if p.Engine != "" {
		r.add("driver", driverText(p))
	}
	r.add("interrupted", yesNo(p.Interrupted))
	cut := "no"
	if p.CutShort {
		cut = "yes"
		if p.CutReason != "" {
			cut += " (" + p.CutReason + ")"
		}
	}
	r.add("cut short", cut)
	if p.CutBy != "" {
		r.add("cut by", p.CutBy)
	}
	if p.SchedLagP99Ms > 0 {
		r.add("scheduler lag p99", ms(p.SchedLagP99Ms)+" ms")
	}
}

// context adds what stood around the probe: its preparation, what the workload read,
// the steady-state rule, the server's side, the skew, and the verdict.
func (r *figures) context(p *result.Probe) {
	if c := p.FraudCheck; c != nil {
		lim := "unbounded"
		if c.Limit > 0 {
			lim = "at most " + count(c.Limit)
		}
		r.add("fraud check rows", fmt.Sprintf("p50 %s, p99 %s, max %s; p50 first / last third %s / %s (%s checks over %s s back, %s)",
			num(c.P50, 0), num(c.P99, 0), num(c.Max, 0), num(c.FirstP50, 0), num(c.LastP50, 0), count(c.Checks), num(c.WindowS, 0), lim))
	}
	if b := p.Backfill; b != nil {
		r.add("back-fill", fmt.Sprintf("%s rows in %s (%s s of history at %s tx/s)", count(b.Rows), secs(b.Seconds), num(b.WindowS, 0), rate(b.Rate)))
	}
	if rs := p.Restore; rs != nil {
		r.add("restore", fmt.Sprintf("%s (%s transactions, %s audit rows deleted, %s wallets restored)", secs(rs.Seconds),
			count(rs.TransactionsRows), count(rs.AuditRows), count(rs.WalletsRestored)))
	}
	if st := p.Steady; st != nil {
		r.add("steady rule", fmt.Sprintf("%s over %d s: level %s ms, slope %s, projected %s of %s ms: %s", orDash(st.Series), st.Seconds,
			ms(st.LevelMs), slope(st), ms(st.ProjectedMs), ms(st.LimitMs), orDash(st.Verdict)))
	}
	if o := p.Observation; o != nil && o.WaitGrowth != nil {
		g := o.WaitGrowth
		r.add("wait that grew", fmt.Sprintf("%s: %s of active samples in the first third, %s in the last", g.Event, pct(g.FirstShare), pct(g.LastShare)))
	}
	if p.Skew.Keys > 0 {
		dist := "uniform"
		if p.Skew.Exponent > 0 {
			dist = "zipf " + num(p.Skew.Exponent, 2)
		}
		r.add("skew", fmt.Sprintf("%s over %s keys: hottest key %s of picks, top 1%% of keys %s", dist, count(int64(p.Skew.Keys)), pct(p.Skew.HottestShare), pct(p.Skew.Top1PctShare)))
	}
	if p.Observation != nil && p.Observation.Bottleneck != "" {
		r.add("bottleneck", p.Observation.Bottleneck)
	}
	if p.Verdict != "" {
		v := string(p.Verdict)
		if p.Reason != "" {
			v += " (" + p.Reason + ")"
		}
		r.add("verdict", v)
	}
	if p.Error != "" {
		r.add("probe error", p.Error)
	}
}

// sweepsTable puts the sweeps side by side, with the sync off/on knee ratios as notes.
func sweepsTable(f *result.File) table {
	u, unitNote := unitOfAll(f)
	t := table{Title: "Sweeps", Header: []string{"workload", "sync_commit", "knee " + u, "bracket " + u,
		"achieved at knee", "p50 ms", "p99 ms", "errors at first failing rate", "probes", "probe-min", "bottleneck"}, Notes: unitNote}
	for i := range f.Sweeps {
		s := &f.Sweeps[i]
		c := sweepCells(s)
		t.Rows = append(t.Rows, []string{s.Workload, string(s.SyncCommit), c.knee, c.bracket, c.achieved, c.p50, c.p99, c.errs,
			fmt.Sprint(len(s.Probes)), num(s.ProbeMinutes, 1), orDash(bottleneckCell(s))})
	}
	for i := range f.Sweeps {
		t.Notes = append(t.Notes, kneeNotes(&f.Sweeps[i])...)
	}
	t.Notes = append(t.Notes, kneeRatios(f)...)
	t.Narrow = []narrowing{wrapCell, keepWhole, cutToNote, wrapCell, keepWhole, keepWhole, keepWhole, cutToNote,
		keepWhole, keepWhole, cutToNote}
	return t
}

// sweepsTableCompact is the sweeps table for a terminal: the figures side by side, and
// under it, per sweep, what does not fit a column: the knee's interval and how it was
// made, the errors at the first failing rate and the bottleneck.
func sweepsTableCompact(f *result.File) table {
	u, unitNote := unitOfAll(f)
	t := table{Title: "Sweeps", Header: []string{"workload", "sync", "knee " + u, "bracket " + u,
		"achieved at knee", "p50 ms", "p99 ms", "probes", "probe min"},
		Narrow: []narrowing{wrapCell, keepWhole, cutToNote, wrapCell}, Notes: unitNote}
	for i := range f.Sweeps {
		s := &f.Sweeps[i]
		c := sweepCells(s)
		knee := c.knee
		if s.Knee > 0 {
			knee = rate(s.Knee)
			if !s.Converged {
				knee += " (not converged)"
			}
		}
		t.Rows = append(t.Rows, []string{s.Workload, string(s.SyncCommit), knee, c.bracket, c.achieved, c.p50, c.p99,
			fmt.Sprint(len(s.Probes)), num(s.ProbeMinutes, 1)})
		notes := kneeNotes(s)
		var more []string
		if c.errs != "-" {
			more = append(more, "errors "+c.errs)
		}
		if bn := bottleneckCell(s); bn != "" {
			more = append(more, "bottleneck "+bn)
		}
		switch {
		case len(more) == 0:
		case s.Interval != nil && s.Knee > 0: // notes[0] is the interval's
			notes[0] += "; " + strings.Join(more, "; ")
		default:
			notes = append([]string{sweepName(s) + ": " + strings.Join(more, "; ")}, notes...)
		}
		t.Notes = append(t.Notes, notes...)
	}
	t.Notes = append(t.Notes, kneeRatios(f)...)
	return t
}

// sweepCellText is what the sweeps tables say of one sweep.
type sweepCellText struct{ knee, bracket, achieved, p50, p99, errs string }

// sweepCells formats a sweep's knee (with its interval), bracket, the achieved rate and
// latency at the knee and the errors at the first failing rate.
func sweepCells(s *result.Sweep) sweepCellText {
	c := sweepCellText{knee: "none passed", bracket: "-", achieved: "-", p50: "-", p99: "-", errs: "-"}
	if s.Knee > 0 {
		c.knee = kneeWithInterval(s, "")
		if !s.Converged {
			c.knee += " (not converged)"
		}
	}
	if s.Bracket.Lo > 0 || s.Bracket.Hi > 0 {
		hi := "no failure"
		if s.Bracket.Hi > 0 {
			hi = rate(s.Bracket.Hi)
		}
		c.bracket = rate(s.Bracket.Lo) + " - " + hi
	}
	if k := kneeProbe(s); k != nil {
		c.achieved, c.p50, c.p99 = rate(k.AchievedRate), ms(k.Latency.P50), ms(k.Latency.P99)
	}
	if ff := firstFailing(s); ff != nil {
		cl := ff.Failed
		cl[result.PoolTimeout] += ff.Rejected
		c.errs = fmt.Sprintf("at %s: %s", rate(ff.TargetRate), classes(cl))
		if ff.Verdict != result.Fail {
			c.errs += " [" + string(ff.Verdict) + "]"
		}
	}
	return c
}

// bottleneckCell is a sweep's bottleneck line, naming the probe rate it describes: the
// line as the search wrote it when it names its rate already ("above the knee, at 3,318
// tx/s: ..."), else prefixed with Sweep.BottleneckRate; a file without a sweep line gets
// the knee probe's.
func bottleneckCell(s *result.Sweep) string {
	bn, at := s.Bottleneck, s.BottleneckRate
	if bn == "" {
		k := kneeProbe(s)
		if k == nil || k.Observation == nil || k.Observation.Bottleneck == "" {
			return ""
		}
		bn, at = k.Observation.Bottleneck, k.TargetRate
	}
	if at <= 0 || strings.HasPrefix(bn, "at ") || strings.HasPrefix(bn, "above the knee") {
		return bn
	}
	if at > s.Knee {
		return fmt.Sprintf("above the knee, at %s%s: %s", rate(at), unit(s.Workload), bn)
	}
	return fmt.Sprintf("at the knee, %s%s: %s", rate(at), unit(s.Workload), bn)
}

// holdNote says what the hold step did: the knee held for its window, after how many
// failed holds above it; "" without a hold step.
func holdNote(s *result.Sweep) string {
	if s.HoldS <= 0 {
		return ""
	}
	var failed []string
	for _, p := range s.Probes {
		if p.Hold && (p.Verdict == result.Fail || p.Verdict == result.NotSteady) {
			failed = append(failed, rate(p.TargetRate))
		}
	}
	n := "the knee was not held (the search ended first)"
	if s.Held {
		n = fmt.Sprintf("the knee held for %s", secs(s.HoldS))
	}
	if len(failed) > 0 {
		n += fmt.Sprintf("; holds failed at %s tx/s (passes of shorter probes there were overruled)", strings.Join(failed, ", "))
	}
	return n
}

// kneeNotes says how a sweep's knee interval was made and where its bracket started; none
// for a knee without an interval.
func kneeNotes(s *result.Sweep) []string {
	var notes []string
	if iv := s.Interval; iv != nil && s.Knee > 0 {
		n := fmt.Sprintf("%s: knee %s", sweepName(s), kneeWithInterval(s, unit(s.Workload)))
		fit := orDash(iv.Method)
		if iv.Probes > 0 {
			fit += fmt.Sprintf(" of %d verdicts", iv.Probes)
		}
		if iv.Midpoint > 0 {
			if iv.WindowS > 0 {
				fit += fmt.Sprintf(", a %s probe passes half the time at %s%s", secs(iv.WindowS), rate(iv.Midpoint), unit(s.Workload))
			} else {
				fit += ", 50 % pass at " + rate(iv.Midpoint) + unit(s.Workload)
			}
		}
		if iv.EventS > 0 {
			fit += fmt.Sprintf(", each probe start and checkpoint a chance to collapse worth %s of steady running", secs(iv.EventS))
		}
		if iv.HasRepeat() && iv.Midpoint > 0 {
			fit += fmt.Sprintf("; a repeat of this search on the unchanged server puts that estimate in %s-%s%s (%s %%)",
				rate(iv.RepeatLo), rate(iv.RepeatHi), unit(s.Workload), num(iv.Level*100, 0))
		}
		n += "; " + fit
		switch {
		case kneeBelow(s):
			n += "; the knee lies below the interval: a rate between them passed some probes and failed others, " +
				"and the knee is the highest rate whose every probe passed"
		case kneeAbove(s):
			n += "; the knee lies above the interval: it passed (and held), but the sweep's probes say a probe of that " +
				"length there fails more often than not; plan with the interval"
		}
		if s.Repeats > 0 {
			n += fmt.Sprintf("; bracket edges probed %d times each", s.Repeats)
			if s.Rounds > 1 {
				n += " per round"
			}
		}
		n += RoundsText(*s)
		notes = append(notes, n)
	}
	if h := holdNote(s); h != "" {
		notes = append(notes, sweepName(s)+": "+h)
	}
	if f := s.FlushMs(); f > 0 && s.SyncCommit != result.SyncOff {
		notes = append(notes, fmt.Sprintf("%s: WAL flush at the knee %s ms per sync, which every commit waits for "+
			"(a faster or slower disk moves this knee)", sweepName(s), num(f, 2)))
	}
	if s.StartFrom != "" {
		notes = append(notes, fmt.Sprintf("%s: bracket started from the knee in %s", sweepName(s), s.StartFrom))
	}
	if p := poolNote(s); p != "" {
		notes = append(notes, sweepName(s)+": "+p)
	}
	return notes
}

// poolNote says which pool the sweep's pool scan (--conns auto) chose and what each pool
// it tried did with every connection busy: "pool 16 connections (--conns auto; saturated
// tx/s with every connection busy, mean of 2 windows: 4: 2,428 · 8: 2,243 · 16: 2,830 ·
// 32: 2,004)"; "" without a scan.
func poolNote(s *result.Sweep) string {
	ps := s.Pool
	if ps == nil || ps.Conns <= 0 {
		return ""
	}
	var pts []string
	windows := 0
	for _, pt := range ps.Points {
		v := rate(pt.Achieved)
		if !pt.Saturated {
			v = "≥ " + v
		}
		pts = append(pts, fmt.Sprintf("%d: %s", pt.Conns, v))
		windows = max(windows, len(pt.Windows))
	}
	mean := ""
	if windows > 1 {
		mean = fmt.Sprintf(", mean of %d windows", windows)
	}
	n := fmt.Sprintf("pool %d connections (--conns auto; saturated%s with every connection busy%s: %s)",
		ps.Conns, unit(s.Workload), mean, strings.Join(pts, " · "))
	if ps.Best != ps.Conns {
		n += fmt.Sprintf("; the smallest within %.0f %% of the best (%d)", 100*(1-ps.Within), ps.Best)
	}
	return n
}

// kneeRatios says, per workload swept under both settings, how much sync off buys; with
// both knees' intervals, as a range from the least to the most it could be.
func kneeRatios(f *result.File) []string {
	type pair struct{ on, off *result.Sweep }
	knees := map[string]*pair{}
	var order []string
	for i := range f.Sweeps {
		s := &f.Sweeps[i]
		p := knees[s.Workload]
		if p == nil {
			p = &pair{}
			knees[s.Workload] = p
			order = append(order, s.Workload)
		}
		switch s.SyncCommit {
		case "on":
			p.on = s
		case "off":
			p.off = s
		}
	}
	sort.Strings(order)
	var notes []string
	for _, w := range order {
		p := knees[w]
		if p.on == nil || p.off == nil || p.on.Knee <= 0 || p.off.Knee <= 0 {
			continue
		}
		ratio := num(p.off.Knee/p.on.Knee, 2) + "x"
		on, off := p.on.Interval, p.off.Interval
		if on != nil && off != nil && on.Lo > 0 && on.Hi > 0 {
			ratio += fmt.Sprintf(" (%s-%s)", num(off.Lo/on.Hi, 2), num(off.Hi/on.Lo, 2))
		}
		notes = append(notes, fmt.Sprintf("%s: synchronous_commit off/on knee ratio %s, %s vs %s%s", w, ratio, rate(p.off.Knee), rate(p.on.Knee), unit(w)))
	}
	return notes
}

// probesTable lists every probe of a sweep in the order it ran; what does not fit a
// column (the fraud check's reads, back-fill, restore, the steady rule, the wait that
// grew) follows the table, one line per probe.
func probesTable(s *result.Sweep) table {
	t := table{Title: "Probes: " + sweepName(s), Header: []string{"#", "rate" + unit(s.Workload), "verdict", "achieved", "drain", "error %", "p99 ms", "cut by", "reason"}}
	for i := range s.Probes {
		p := &s.Probes[i]
		v := orDash(string(p.Verdict))
		if p.TargetRate == s.Knee && p.Verdict == result.Pass {
			v += " (knee)"
		}
		if p.DriverLimited && p.Verdict != result.DriverLimited {
			v += " [driver limited]"
		}
		reason := p.Reason
		if reason == "" {
			reason = p.CutReason
		}
		t.Rows = append(t.Rows, []string{fmt.Sprint(i + 1), rate(p.TargetRate), v, rate(p.AchievedRate),
			count(p.DrainCommitted), pct(p.ErrorRate()), ms(p.Latency.P99), cutBy(p), orDash(reason)})
		if d := probeDetails(p); len(d) > 0 {
			t.Notes = append(t.Notes, fmt.Sprintf("#%d %s%s: %s", i+1, rate(p.TargetRate), unit(s.Workload), strings.Join(d, "; ")))
		}
	}
	if s.Stop != "" {
		t.Notes = append(t.Notes, "search stopped: "+s.Stop)
	}
	// A long verdict wraps, a long reason is cut short with the whole of it under the table.
	t.Narrow = []narrowing{keepWhole, wrapCell, wrapCell, keepWhole, keepWhole, keepWhole, keepWhole, keepWhole, cutToNote}
	return t
}

// cutBy says what stopped a probe early: errors, trend or server; "yes" for a probe cut
// short by a search that did not say why; "no".
func cutBy(p *result.Probe) string {
	switch {
	case p.CutBy != "":
		return p.CutBy
	case p.CutShort:
		return "yes"
	}
	return "no"
}

// probeDetails are a probe's figures beyond its books, each a short phrase: what the
// fraud check read, the back-fill and restore before it, the steady rule's reading and
// the wait event that grew.
func probeDetails(p *result.Probe) []string {
	var d []string
	if c := p.FraudCheck; c != nil {
		d = append(d, fmt.Sprintf("fraud check rows p50 %s (first / last third %s / %s), p99 %s",
			num(c.P50, 0), num(c.FirstP50, 0), num(c.LastP50, 0), num(c.P99, 0)))
	}
	if b := p.Backfill; b != nil {
		d = append(d, fmt.Sprintf("back-fill %s rows in %s", count(b.Rows), secs(b.Seconds)))
	}
	if r := p.Restore; r != nil {
		d = append(d, "restore "+secs(r.Seconds))
	}
	if st := p.Steady; st != nil {
		switch {
		case st.Verdict == "too_short":
			d = append(d, fmt.Sprintf("%s: too few seconds (%d) to judge a trend", orDash(st.Series), st.Seconds))
		case st.Verdict == "growing" && st.LimitMs > 0:
			d = append(d, fmt.Sprintf("%s %s: growing, %s ms projected > %s ms", orDash(st.Series), slope(st), ms(st.ProjectedMs), ms(st.LimitMs)))
		default:
			d = append(d, fmt.Sprintf("%s %s: %s", orDash(st.Series), slope(st), orDash(st.Verdict)))
		}
	}
	if o := p.Observation; o != nil && o.WaitGrowth != nil {
		g := o.WaitGrowth
		d = append(d, fmt.Sprintf("wait that grew: %s %s to %s of active samples", g.Event, pct(g.FirstShare), pct(g.LastShare)))
	}
	return d
}

// driverText is how the client ran a probe: "engine loop on 2 core(s), 2 loops busy 0.81
// and 0.47 (loop 2 added at 3 s), client CPU 6.9 s (0.131 ms/tx)"; per row for copy.
func driverText(p *result.Probe) string {
	t := fmt.Sprintf("engine %s on %d core(s)", p.Engine, p.DriverThreads)
	if len(p.LoopBusy) > 0 {
		busy := make([]string, len(p.LoopBusy))
		for i, b := range p.LoopBusy {
			busy[i] = fmt.Sprintf("%.2f", b)
		}
		t += fmt.Sprintf(", %d loop(s) busy %s", len(p.LoopBusy), strings.Join(busy, ", "))
		var added []string
		for i, at := range p.LoopsAddedS {
			if at > 0 {
				added = append(added, fmt.Sprintf("loop %d added at %.0f s", i+1, at))
			}
		}
		if len(added) > 0 {
			t += " (" + strings.Join(added, ", ") + ")"
		}
	}
	t += fmt.Sprintf(", client CPU %.1f s", p.ClientCPUSeconds)
	if p.ClientCPUPerTxMs > 0 {
		per := "tx"
		if p.Workload == "copy" { // its commits are rows
			per = "row"
		}
		t += fmt.Sprintf(" (%.3f ms/%s)", p.ClientCPUPerTxMs, per)
	}
	return t
}
