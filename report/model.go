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
	Wrap   bool     // long cells may wrap in a terminal
}

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

// firstFailing returns the failing probe at the lowest offered rate (the first rate the
// server could not hold), or nil.
func firstFailing(s *result.Sweep) *result.Probe {
	var found *result.Probe
	for i := range s.Probes {
		p := &s.Probes[i]
		if failing(p) && (found == nil || p.TargetRate < found.TargetRate) {
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
		var rates []string
		for _, p := range s.Probes {
			// A probe judged by its errors (fail) stands even when the driver was also
			// behind; only the verdict driver_limited (or an unjudged run) voids it.
			if p.Verdict == result.DriverLimited || (p.Verdict == "" && p.DriverLimited) {
				rates = append(rates, rate(p.TargetRate))
			}
		}
		if len(rates) > 0 {
			add(fmt.Sprintf("%s: the client, not the server, was the limit at %s tx/s: those probes say nothing about the server", sweepName(&s), strings.Join(rates, ", ")))
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
	return strings.Join(parts, " · ")
}

// buildModel turns a results file into what every textual format says.
func buildModel(f *result.File) model {
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
	if f.Command == "run" {
		for i := range f.Sweeps {
			for j := range f.Sweeps[i].Probes {
				m.Tables = append(m.Tables, runTables(&f.Sweeps[i].Probes[j])...)
			}
		}
		return m
	}
	m.Tables = append(m.Tables, sweepsTable(f))
	for i := range f.Sweeps {
		m.Tables = append(m.Tables, probesTable(&f.Sweeps[i]))
	}
	return m
}

// runTables describes one probe of a run: its books, then its latency.
func runTables(p *result.Probe) []table {
	kv := table{Title: fmt.Sprintf("Probe: %s sync=%s at %s tx/s", p.Workload, p.SyncCommit, rate(p.TargetRate)),
		Header: []string{"figure", "value"}}
	add := func(k, v string) { kv.Rows = append(kv.Rows, []string{k, v}) }
	add("target rate", rate(p.TargetRate)+" tx/s")
	add("measured window", fmt.Sprintf("%s s of %s s (warm-up %s s)", num(p.MeasuredS, 1), num(p.DurationS, 1), num(p.WarmupS, 1)))
	add("scheduled", count(p.Scheduled))
	add("committed", count(p.Committed))
	add("failed", fmt.Sprintf("%s (%s)", count(p.Failed.Total()), classes(p.Failed)))
	add("rejected (pool_timeout)", count(p.Rejected))
	add("error rate", pct(p.ErrorRate()))
	add("achieved", rate(p.AchievedRate)+" tx/s")
	if p.Retries > 0 {
		add("retries", count(p.Retries))
	}
	rows := "ok"
	if !p.Checks.RowsOK {
		rows = "MISMATCH"
	}
	rowsLine := fmt.Sprintf("%s (%s gained %s rows, %s committed", rows, orDash(p.Checks.Table), count(p.Checks.RowDelta), count(p.Checks.CommittedTotal))
	if p.Checks.Uncertain > 0 {
		rowsLine += fmt.Sprintf(", %s cancelled mid-commit", count(p.Checks.Uncertain))
	}
	add("check: rows", rowsLine+")")
	bal := "not checked"
	if p.Checks.BalanceOK != nil {
		bal = "ok (money conserved)"
		if !*p.Checks.BalanceOK {
			bal = fmt.Sprintf("MISMATCH (%s before, %s after)", p.Checks.BalanceBefore, p.Checks.BalanceAfter)
		}
	}
	add("check: balance", bal)
	for _, pr := range p.Checks.Problems {
		add("check problem", pr)
	}
	dl := "no"
	if p.DriverLimited {
		dl = "YES: the client, not the server, was the limit"
		if p.DriverLimitReason != "" {
			dl += " (" + p.DriverLimitReason + ")"
		}
	}
	add("driver limited", dl)
	if p.Engine != "" {
		add("driver", fmt.Sprintf("engine %s on %d core(s), client CPU %.1f s", p.Engine, p.DriverThreads, p.ClientCPUSeconds))
	}
	add("interrupted", yesNo(p.Interrupted))
	cut := "no"
	if p.CutShort {
		cut = "yes"
		if p.CutReason != "" {
			cut += " (" + p.CutReason + ")"
		}
	}
	add("cut short", cut)
	if p.Skew.Keys > 0 {
		dist := "uniform"
		if p.Skew.Exponent > 0 {
			dist = "zipf " + num(p.Skew.Exponent, 2)
		}
		add("skew", fmt.Sprintf("%s over %s keys: hottest key %s of picks, top 1%% of keys %s", dist, count(int64(p.Skew.Keys)), pct(p.Skew.HottestShare), pct(p.Skew.Top1PctShare)))
	}
	if p.Observation != nil && p.Observation.Bottleneck != "" {
		add("bottleneck", p.Observation.Bottleneck)
	}
	if p.Verdict != "" {
		v := p.Verdict
		if p.Reason != "" {
			v += " (" + p.Reason + ")"
		}
		add("verdict", v)
	}
	if p.Error != "" {
		add("probe error", p.Error)
	}
	lat := table{Title: "Latency (ms)", Header: []string{"", "p50", "p90", "p99", "p99.9", "max", "mean"}}
	for _, l := range []struct {
		name string
		l    result.Latency
	}{{"response (intended start to commit)", p.Latency}, {"service (actual start to commit)", p.Service}, {"queue wait", p.QueueWait}} {
		lat.Rows = append(lat.Rows, []string{l.name, ms(l.l.P50), ms(l.l.P90), ms(l.l.P99), ms(l.l.P999), ms(l.l.Max), ms(l.l.Mean)})
	}
	return []table{kv, lat}
}

// sweepsTable puts the sweeps side by side, with the sync off/on knee ratios as notes.
func sweepsTable(f *result.File) table {
	t := table{Title: "Sweeps", Header: []string{"workload", "sync_commit", "knee tx/s", "bracket tx/s",
		"achieved at knee", "p50 ms", "p99 ms", "errors at first failing rate", "probes", "probe-min", "bottleneck at knee"}}
	for i := range f.Sweeps {
		s := &f.Sweeps[i]
		knee, bracket := "none passed", "-"
		if s.Knee > 0 {
			knee = rate(s.Knee)
			if !s.Converged {
				knee += " (not converged)"
			}
		}
		if s.Bracket.Lo > 0 || s.Bracket.Hi > 0 {
			hi := "no failure"
			if s.Bracket.Hi > 0 {
				hi = rate(s.Bracket.Hi)
			}
			bracket = rate(s.Bracket.Lo) + " - " + hi
		}
		ach, p50, p99 := "-", "-", "-"
		if k := kneeProbe(s); k != nil {
			ach, p50, p99 = rate(k.AchievedRate), ms(k.Latency.P50), ms(k.Latency.P99)
		}
		errs := "-"
		if ff := firstFailing(s); ff != nil {
			c := ff.Failed
			c[result.PoolTimeout] += ff.Rejected
			errs = fmt.Sprintf("at %s: %s", rate(ff.TargetRate), classes(c))
			if ff.Verdict != result.Fail {
				errs += " [" + ff.Verdict + "]"
			}
		}
		bn := s.Bottleneck
		if bn == "" {
			if k := kneeProbe(s); k != nil && k.Observation != nil {
				bn = k.Observation.Bottleneck
			}
		}
		t.Rows = append(t.Rows, []string{s.Workload, s.SyncCommit, knee, bracket, ach, p50, p99, errs,
			fmt.Sprint(len(s.Probes)), num(s.ProbeMinutes, 1), orDash(bn)})
	}
	t.Notes = kneeRatios(f)
	t.Wrap = true
	return t
}

// kneeRatios says, per workload swept under both settings, how much sync off buys.
func kneeRatios(f *result.File) []string {
	type pair struct{ on, off float64 }
	knees := map[string]*pair{}
	var order []string
	for _, s := range f.Sweeps {
		p := knees[s.Workload]
		if p == nil {
			p = &pair{}
			knees[s.Workload] = p
			order = append(order, s.Workload)
		}
		switch s.SyncCommit {
		case "on":
			p.on = s.Knee
		case "off":
			p.off = s.Knee
		}
	}
	sort.Strings(order)
	var notes []string
	for _, w := range order {
		p := knees[w]
		if p.on > 0 && p.off > 0 {
			notes = append(notes, fmt.Sprintf("%s: synchronous_commit off/on knee ratio %sx (%s vs %s tx/s)", w, num(p.off/p.on, 2), rate(p.off), rate(p.on)))
		}
	}
	return notes
}

// probesTable lists every probe of a sweep in the order it ran.
func probesTable(s *result.Sweep) table {
	t := table{Title: "Probes: " + sweepName(s), Header: []string{"#", "rate tx/s", "verdict", "achieved tx/s", "error %", "p99 ms", "cut short", "reason"}}
	for i := range s.Probes {
		p := &s.Probes[i]
		v := orDash(p.Verdict)
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
			pct(p.ErrorRate()), ms(p.Latency.P99), yesNo(p.CutShort), orDash(reason)})
	}
	if s.Stop != "" {
		t.Notes = append(t.Notes, "search stopped: "+s.Stop)
	}
	return t
}
