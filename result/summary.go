package result

import "time"

// SummaryVersion is the version of the summary's JSON (--summary-json), separate from the
// results file's FormatVersion.
const SummaryVersion = 1

// Summary is the short form of a results file that scripts read (--summary-json): per
// sweep of a search its knee, interval, bracket, p99 at the knee and bottleneck; for a run
// the probe's key figures and the thresholds it was held to. Rates are in tx/s, latencies
// in ms, shares as fractions (0.001 = 0.1 %).
type Summary struct {
	SummaryVersion int          `json:"summary_version"`
	Tool           string       `json:"tool"`
	ToolVersion    string       `json:"tool_version"`
	Command        string       `json:"command"` // run or search
	StartedAt      time.Time    `json:"started_at"`
	FinishedAt     time.Time    `json:"finished_at"`
	ServerVersion  string       `json:"server_version,omitempty"`
	Interrupted    bool         `json:"interrupted,omitempty"`
	Error          string       `json:"error,omitempty"`
	Warnings       []string     `json:"warnings,omitempty"`
	Sweeps         []SweepBrief `json:"sweeps,omitempty"` // search
	Run            *RunBrief    `json:"run,omitempty"`    // run
	// Thresholds are the run's thresholds (--fail-on-error-rate, --p99-slo) and whether
	// the probe kept them; Passed is false when any was broken.
	Thresholds []Threshold `json:"thresholds,omitempty"`
	Passed     bool        `json:"passed"`
}

// SweepBrief is one sweep of a search in the summary.
type SweepBrief struct {
	Workload   string     `json:"workload"`
	SyncCommit SyncCommit `json:"sync_commit"`
	// KneeTxS is the highest rate that passed (0 when none did).
	KneeTxS float64 `json:"knee_tx_s"`
	// Interval is the knee's confidence interval (nil until there are passes and fails).
	Interval *IntervalBrief `json:"interval,omitempty"`
	// Bracket is the search's last bracket: lo passed, hi failed (0 when none failed).
	BracketLoTxS float64 `json:"bracket_lo_tx_s"`
	BracketHiTxS float64 `json:"bracket_hi_tx_s"`
	Converged    bool    `json:"converged"`
	// P99AtKneeMs is the p99 latency (intended start to commit) of the probe at the knee
	// (0 when there is no knee).
	P99AtKneeMs      float64 `json:"p99_at_knee_ms"`
	AchievedAtKneeTx float64 `json:"achieved_at_knee_tx_s"`
	// FlushAtKneeMs is Sweep.FlushMs: the storage's mean WAL flush time at the knee (0
	// when unknown).
	FlushAtKneeMs float64 `json:"wal_flush_at_knee_ms,omitempty"`
	Bottleneck    string  `json:"bottleneck,omitempty"`
	BottleneckTxS float64 `json:"bottleneck_rate_tx_s,omitempty"`
	Probes        int     `json:"probes"`
	ProbeMinutes  float64 `json:"probe_minutes"`
	Stop          string  `json:"stop,omitempty"`
}

// IntervalBrief is a knee's interval in the summary.
type IntervalBrief struct {
	LoTxS float64 `json:"lo_tx_s"`
	HiTxS float64 `json:"hi_tx_s"`
	Level float64 `json:"level"` // e.g. 0.9
	// RepeatLoTxS and RepeatHiTxS: where a repeat's estimate lands (Interval.RepeatLo).
	RepeatLoTxS float64 `json:"repeat_lo_tx_s,omitempty"`
	RepeatHiTxS float64 `json:"repeat_hi_tx_s,omitempty"`
}

// RunBrief is the probe of a run in the summary.
type RunBrief struct {
	Workload     string     `json:"workload"`
	SyncCommit   SyncCommit `json:"sync_commit"`
	TargetTxS    float64    `json:"target_rate_tx_s"`
	AchievedTxS  float64    `json:"achieved_rate_tx_s"`
	MeasuredS    float64    `json:"measured_s"`
	Scheduled    int64      `json:"scheduled"`
	Committed    int64      `json:"committed"`
	Failed       int64      `json:"failed"`
	Rejected     int64      `json:"rejected"`
	ErrorRate    float64    `json:"error_rate"` // (failed + rejected) / scheduled
	P50Ms        float64    `json:"p50_ms"`
	P99Ms        float64    `json:"p99_ms"`
	P999Ms       float64    `json:"p999_ms"`
	MaxMs        float64    `json:"max_ms"`
	Bottleneck   string     `json:"bottleneck,omitempty"`
	ChecksOK     bool       `json:"checks_ok"`
	Problems     []string   `json:"problems,omitempty"`
	CutShort     bool       `json:"cut_short,omitempty"`
	Error        string     `json:"error,omitempty"`
	DriverLimits bool       `json:"driver_limited,omitempty"`
}

// Threshold is one limit a run's probe was held to.
type Threshold struct {
	Name  string  `json:"name"`  // error_rate or p99_ms
	Limit float64 `json:"limit"` // the share or the milliseconds given
	Value float64 `json:"value"` // what the probe measured
	OK    bool    `json:"ok"`
}

// Thresholds holds a run's probe to the limits given: maxErrorRate (negative: none) and
// p99SLO (0: none), in that order.
func Thresholds(p *Probe, maxErrorRate float64, p99SLO time.Duration) []Threshold {
	var out []Threshold
	if maxErrorRate >= 0 {
		v := p.ErrorRate()
		out = append(out, Threshold{Name: "error_rate", Limit: maxErrorRate, Value: v, OK: v <= maxErrorRate && p.Scheduled > 0})
	}
	if p99SLO > 0 {
		limit := float64(p99SLO) / float64(time.Millisecond)
		out = append(out, Threshold{Name: "p99_ms", Limit: limit, Value: p.Latency.P99, OK: p.Latency.P99 <= limit && p.Committed > 0})
	}
	return out
}

// Summarize makes the summary of f; thresholds are the run's (nil for a search).
func Summarize(f *File, thresholds []Threshold) Summary {
	s := Summary{SummaryVersion: SummaryVersion, Tool: f.Tool, ToolVersion: f.ToolVersion, Command: f.Command,
		StartedAt: f.StartedAt, FinishedAt: f.FinishedAt, Interrupted: f.Interrupted, Error: f.Error,
		Warnings: f.Warnings, Thresholds: thresholds, Passed: f.Error == "" && !f.Interrupted}
	if f.Server != nil {
		s.ServerVersion = f.Server.Version
	}
	for _, t := range thresholds {
		s.Passed = s.Passed && t.OK
	}
	if f.Command == "run" && len(f.Sweeps) == 1 && len(f.Sweeps[0].Probes) == 1 {
		p := &f.Sweeps[0].Probes[0]
		r := &RunBrief{Workload: p.Workload, SyncCommit: p.SyncCommit, TargetTxS: p.TargetRate, AchievedTxS: p.AchievedRate,
			MeasuredS: p.MeasuredS, Scheduled: p.Scheduled, Committed: p.Committed, Failed: p.Failed.Total(), Rejected: p.Rejected,
			ErrorRate: p.ErrorRate(), P50Ms: p.Latency.P50, P99Ms: p.Latency.P99, P999Ms: p.Latency.P999, MaxMs: p.Latency.Max,
			ChecksOK: len(p.Checks.Problems) == 0, Problems: p.Checks.Problems, CutShort: p.CutShort, Error: p.Error,
			DriverLimits: p.DriverLimited}
		if p.Observation != nil {
			r.Bottleneck = p.Observation.Bottleneck
		}
		s.Run = r
		s.Passed = s.Passed && r.ChecksOK && r.Error == ""
		return s
	}
	for i := range f.Sweeps {
		s.Sweeps = append(s.Sweeps, BriefOf(&f.Sweeps[i]))
	}
	return s
}

// BriefOf is the summary of one sweep.
func BriefOf(sw *Sweep) SweepBrief {
	b := SweepBrief{Workload: sw.Workload, SyncCommit: sw.SyncCommit, KneeTxS: sw.Knee, BracketLoTxS: sw.Bracket.Lo,
		BracketHiTxS: sw.Bracket.Hi, Converged: sw.Converged, Bottleneck: sw.Bottleneck, BottleneckTxS: sw.BottleneckRate,
		Probes: len(sw.Probes), ProbeMinutes: sw.ProbeMinutes, Stop: sw.Stop}
	if iv := sw.Interval; iv != nil {
		b.Interval = &IntervalBrief{LoTxS: iv.Lo, HiTxS: iv.Hi, Level: iv.Level, RepeatLoTxS: iv.RepeatLo, RepeatHiTxS: iv.RepeatHi}
	}
	if k := sw.KneeProbe(); k != nil {
		b.P99AtKneeMs, b.AchievedAtKneeTx = k.Latency.P99, k.AchievedRate
	}
	b.FlushAtKneeMs = sw.FlushMs()
	return b
}

// KneeProbe returns the last passing probe at the sweep's knee rate, or nil when none
// passed.
func (sw *Sweep) KneeProbe() *Probe {
	if sw.Knee <= 0 {
		return nil
	}
	var found *Probe
	for i := range sw.Probes {
		if p := &sw.Probes[i]; p.TargetRate == sw.Knee && p.Verdict == Pass {
			found = p
		}
	}
	return found
}

// FlushMs is the storage's mean WAL flush time at the sweep's knee: the WAL sync time per
// sync (pg_stat_wal's wal_sync_time / wal_sync) summed over every passing probe at the
// knee rate, the hold included. With synchronous_commit on a commit waits for a flush, so
// a sync-on knee moves with this figure when the same server's storage is faster or slower
// on another day (docs/methodology.md, "What the interval does not cover"). 0 when no
// passing probe at the knee recorded sync times (track_wal_io_timing off, or no WAL
// statistics).
func (sw *Sweep) FlushMs() float64 {
	if sw.Knee <= 0 {
		return 0
	}
	var ms float64
	var syncs int64
	for i := range sw.Probes {
		p := &sw.Probes[i]
		if p.TargetRate != sw.Knee || p.Verdict != Pass || p.Observation == nil {
			continue
		}
		if w := p.Observation.WAL; w.Syncs > 0 && w.SyncMs > 0 {
			ms, syncs = ms+w.SyncMs, syncs+w.Syncs
		}
	}
	if syncs == 0 {
		return 0
	}
	return ms / float64(syncs)
}
