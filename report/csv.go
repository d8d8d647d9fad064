package report

import (
	"encoding/csv"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/pgceiling/pgceiling/result"
)

// The CSV files name every number's unit at the end of its column's name: _tx_s
// (transactions per second), _tx (a count of transactions or arrivals), _ms, _s, _frac
// (a fraction from 0 to 1), _rows, _bytes_per_tx, _ms_per_s. Numbers are rounded to what
// their source resolves, never printed with 17 digits: the decimals below.
const (
	decRate  = 2 // tx/s
	decMs    = 3 // ms: the histograms resolve 1 µs
	decS     = 3 // s
	decFrac  = 6 // fractions: the default error budget is 0.001
	decRows  = 1 // rows per check
	decPerTx = 3 // bytes and syncs per transaction
	decSlope = 4 // ms per s
)

// column is one CSV column over rows of type T: a text cell, or a number rounded to dec
// decimals (num's false is an empty cell: the file does not have the figure).
type column[T any] struct {
	name string
	text func(T) string
	num  func(T) (float64, bool)
	dec  int
}

func textCol[T any](name string, f func(T) string) column[T] { return column[T]{name: name, text: f} }

func numCol[T any](name string, dec int, f func(T) float64) column[T] {
	return column[T]{name: name, dec: dec, num: func(r T) (float64, bool) { return f(r), true }}
}

func optCol[T any](name string, dec int, f func(T) (float64, bool)) column[T] {
	return column[T]{name: name, dec: dec, num: f}
}

func intCol[T any](name string, f func(T) int64) column[T] {
	return column[T]{name: name, num: func(r T) (float64, bool) { return float64(f(r)), true }}
}

func boolCol[T any](name string, f func(T) bool) column[T] {
	return column[T]{name: name, text: func(r T) string { return strconv.FormatBool(f(r)) }}
}

// cell renders r's cell of c.
func (c column[T]) cell(r T) string {
	if c.text != nil {
		return c.text(r)
	}
	v, ok := c.num(r)
	if !ok {
		return ""
	}
	return roundText(v, c.dec)
}

// roundText formats v rounded to dec decimals, without trailing zeros: 494.9, 0.001, 12.
func roundText(v float64, dec int) string {
	s := strconv.FormatFloat(v, 'f', dec, 64)
	if strings.Contains(s, ".") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	if s == "-0" {
		s = "0"
	}
	return s
}

// writeTable writes a header of the columns' names and one row per element of rows.
func writeTable[T any](w io.Writer, cols []column[T], rows []T) error {
	cw := csv.NewWriter(w)
	cw.Write(header(cols))
	cells := make([]string, len(cols))
	for _, r := range rows {
		for i, c := range cols {
			cells[i] = c.cell(r)
		}
		cw.Write(cells)
	}
	cw.Flush()
	if err := cw.Error(); err != nil {
		return fmt.Errorf("csv report: %w", err)
	}
	return nil
}

func header[T any](cols []column[T]) []string {
	h := make([]string, len(cols))
	for i, c := range cols {
		h[i] = c.name
	}
	return h
}

// runID is f's run id, derived from the file when it has none (result.File.EnsureRunID).
func runID(f *result.File) string {
	if f.RunID != "" {
		return f.RunID
	}
	g := *f
	g.EnsureRunID()
	return g.RunID
}

// timestamp is t in RFC 3339, UTC, to the second; empty for the zero time (a probe that
// never started).
func timestamp(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339)
}

// probeRow is one probe with its sweep and file.
type probeRow struct {
	run string
	s   *result.Sweep
	i   int // index in s.Probes
	p   *result.Probe
}

// failedCols are the failed_<class>_tx columns, one per class but pool_timeout (the
// rejected_tx column), in class order.
func failedCols[T any](counts func(T) *result.Counts) []column[T] {
	var cols []column[T]
	for c := result.Class(0); c < result.NumClasses; c++ {
		if c != result.PoolTimeout {
			cols = append(cols, intCol("failed_"+c.String()+"_tx", func(r T) int64 { return counts(r)[c] }))
		}
	}
	return cols
}

// identityCols are the columns that start every row of both CSV files: which run, when,
// how driven, which sweep and probe.
func identityCols[T any](row func(T) *probeRow, when func(T) string, whenName string) []column[T] {
	return []column[T]{
		textCol("run_id", func(r T) string { return row(r).run }),
		textCol(whenName, when),
		textCol("engine", func(r T) string { return string(row(r).p.Engine) }),
		intCol("conns", func(r T) int64 { return int64(row(r).p.Conns) }),
		textCol("workload", func(r T) string { return row(r).s.Workload }),
		textCol("sync_commit", func(r T) string { return string(row(r).s.SyncCommit) }),
		intCol("probe", func(r T) int64 { return int64(row(r).i + 1) }),
		numCol("target_rate_tx_s", decRate, func(r T) float64 { return row(r).p.TargetRate }),
	}
}

// subCol is a number column of a part of the probe row that may be missing (nil: an
// empty cell), such as the observation or the fraud check.
func subCol[P any](name string, dec int, part func(*probeRow) *P, f func(*P) float64) column[*probeRow] {
	return optCol(name, dec, func(r *probeRow) (float64, bool) {
		if x := part(r); x != nil {
			return f(x), true
		}
		return 0, false
	})
}

// subText is a text column of a part of the probe row that may be missing.
func subText[P any](name string, part func(*probeRow) *P, f func(*P) string) column[*probeRow] {
	return textCol(name, func(r *probeRow) string {
		if x := part(r); x != nil {
			return f(x)
		}
		return ""
	})
}

// The parts of a probe row that may be missing.
func ofObservation(r *probeRow) *result.Observation { return r.p.Observation }
func ofInterval(r *probeRow) *result.Interval       { return r.s.Interval }
func ofFraudCheck(r *probeRow) *result.CheckRead    { return r.p.FraudCheck }
func ofBackfill(r *probeRow) *result.Backfill       { return r.p.Backfill }
func ofRestore(r *probeRow) *result.Restore         { return r.p.Restore }
func ofSteady(r *probeRow) *result.Steady           { return r.p.Steady }
func ofWaitGrowth(r *probeRow) *result.WaitShift {
	if o := r.p.Observation; o != nil {
		return o.WaitGrowth
	}
	return nil
}

// probeColumns are probes.csv's columns. Columns are only ever added at the end.
func probeColumns() []column[*probeRow] {
	self := func(r *probeRow) *probeRow { return r }
	cols := identityCols(self, func(r *probeRow) string { return timestamp(r.p.StartedAt) }, "started_at_utc")
	cols = append(cols,
		textCol("verdict", func(r *probeRow) string { return string(r.p.Verdict) }),
		textCol("reason", func(r *probeRow) string { return r.p.Reason }),
		boolCol("at_knee", func(r *probeRow) bool { return r.p.Verdict == result.Pass && r.p.TargetRate == r.s.Knee }),
		intCol("scheduled_tx", func(r *probeRow) int64 { return r.p.Scheduled }),
		intCol("committed_tx", func(r *probeRow) int64 { return r.p.Committed }),
		intCol("rejected_tx", func(r *probeRow) int64 { return r.p.Rejected }))
	cols = append(cols, failedCols(func(r *probeRow) *result.Counts { return &r.p.Failed })...)
	return append(cols,
		numCol("error_rate_frac", decFrac, func(r *probeRow) float64 { return r.p.ErrorRate() }),
		numCol("achieved_rate_tx_s", decRate, func(r *probeRow) float64 { return r.p.AchievedRate }),
		numCol("measured_s", decS, func(r *probeRow) float64 { return r.p.MeasuredS }),
		numCol("latency_p50_ms", decMs, func(r *probeRow) float64 { return r.p.Latency.P50 }),
		numCol("latency_p90_ms", decMs, func(r *probeRow) float64 { return r.p.Latency.P90 }),
		numCol("latency_p99_ms", decMs, func(r *probeRow) float64 { return r.p.Latency.P99 }),
		numCol("latency_p999_ms", decMs, func(r *probeRow) float64 { return r.p.Latency.P999 }),
		numCol("latency_max_ms", decMs, func(r *probeRow) float64 { return r.p.Latency.Max }),
		numCol("latency_mean_ms", decMs, func(r *probeRow) float64 { return r.p.Latency.Mean }),
		numCol("service_p99_ms", decMs, func(r *probeRow) float64 { return r.p.Service.P99 }),
		numCol("queue_wait_p99_ms", decMs, func(r *probeRow) float64 { return r.p.QueueWait.P99 }),
		boolCol("cut_short", func(r *probeRow) bool { return r.p.CutShort }),
		boolCol("driver_limited", func(r *probeRow) bool { return r.p.DriverLimited }),
		boolCol("interrupted", func(r *probeRow) bool { return r.p.Interrupted }),
		boolCol("rows_ok", func(r *probeRow) bool { return r.p.Checks.RowsOK }),
		subText("balance_ok", func(r *probeRow) *bool { return r.p.Checks.BalanceOK }, func(b *bool) string { return strconv.FormatBool(*b) }),
		subCol("wal_bytes_per_tx", decPerTx, ofObservation, func(o *result.Observation) float64 { return o.WAL.BytesPerTx }),
		subCol("wal_syncs_per_tx", decPerTx, ofObservation, func(o *result.Observation) float64 { return o.WAL.SyncsPerTx }),
		subCol("server_cpu_share_frac", decFrac, ofObservation, func(o *result.Observation) float64 { return o.ServerCPUShare }),
		subText("bottleneck", ofObservation, func(o *result.Observation) string { return o.Bottleneck }),
		// The sweep's figures, repeated on each of its probes' rows.
		numCol("knee_tx_s", decRate, func(r *probeRow) float64 { return r.s.Knee }),
		subCol("knee_lo_tx_s", decRate, ofInterval, func(iv *result.Interval) float64 { return iv.Lo }),
		subCol("knee_hi_tx_s", decRate, ofInterval, func(iv *result.Interval) float64 { return iv.Hi }),
		subCol("interval_level_frac", decFrac, ofInterval, func(iv *result.Interval) float64 { return iv.Level }),
		optCol("bottleneck_rate_tx_s", decRate, func(r *probeRow) (float64, bool) { return r.s.BottleneckRate, r.s.BottleneckRate > 0 }),
		intCol("committed_in_window_tx", func(r *probeRow) int64 { return r.p.CommittedInWindow }),
		intCol("drain_committed_tx", func(r *probeRow) int64 { return r.p.DrainCommitted }),
		textCol("cut_by", func(r *probeRow) string { return r.p.CutBy }),
		numCol("sched_lag_p99_ms", decMs, func(r *probeRow) float64 { return r.p.SchedLagP99Ms }),
		subCol("fraud_check_p50_rows", decRows, ofFraudCheck, func(c *result.CheckRead) float64 { return c.P50 }),
		subCol("fraud_check_p99_rows", decRows, ofFraudCheck, func(c *result.CheckRead) float64 { return c.P99 }),
		subCol("fraud_check_p50_first_third_rows", decRows, ofFraudCheck, func(c *result.CheckRead) float64 { return c.FirstP50 }),
		subCol("fraud_check_p50_last_third_rows", decRows, ofFraudCheck, func(c *result.CheckRead) float64 { return c.LastP50 }),
		subCol("backfill_rows", 0, ofBackfill, func(b *result.Backfill) float64 { return float64(b.Rows) }),
		subCol("backfill_s", decS, ofBackfill, func(b *result.Backfill) float64 { return b.Seconds }),
		subCol("restore_s", decS, ofRestore, func(x *result.Restore) float64 { return x.Seconds }),
		subText("steady_series", ofSteady, func(v *result.Steady) string { return v.Series }),
		subCol("steady_slope_ms_per_s", decSlope, ofSteady, func(v *result.Steady) float64 { return v.SlopeMsPerS }),
		subCol("steady_slope_lo_ms_per_s", decSlope, ofSteady, func(v *result.Steady) float64 { return v.SlopeLo }),
		subCol("steady_slope_hi_ms_per_s", decSlope, ofSteady, func(v *result.Steady) float64 { return v.SlopeHi }),
		subText("steady_verdict", ofSteady, func(v *result.Steady) string { return v.Verdict }),
		subText("wait_growth_event", ofWaitGrowth, func(g *result.WaitShift) string { return g.Event }),
		subCol("wait_growth_first_share_frac", decFrac, ofWaitGrowth, func(g *result.WaitShift) float64 { return g.FirstShare }),
		subCol("wait_growth_last_share_frac", decFrac, ofWaitGrowth, func(g *result.WaitShift) float64 { return g.LastShare }),
		optCol("repeat_lo_tx_s", decRate, func(r *probeRow) (float64, bool) { return repeatEnd(r, false) }),
		optCol("repeat_hi_tx_s", decRate, func(r *probeRow) (float64, bool) { return repeatEnd(r, true) }))
}

// repeatEnd is one end of the sweep's repeat interval (where a second run's estimate
// falls), when the interval records one.
func repeatEnd(r *probeRow, hi bool) (float64, bool) {
	iv := r.s.Interval
	if iv == nil || !iv.HasRepeat() {
		return 0, false
	}
	if hi {
		return iv.RepeatHi, true
	}
	return iv.RepeatLo, true
}

// probeRows lists every probe of every sweep.
func probeRows(f *result.File) []*probeRow {
	run := runID(f)
	var rows []*probeRow
	for si := range f.Sweeps {
		s := &f.Sweeps[si]
		for i := range s.Probes {
			rows = append(rows, &probeRow{run: run, s: s, i: i, p: &s.Probes[i]})
		}
	}
	return rows
}

// CSVHeader is the header row of WriteCSV (probes.csv).
func CSVHeader() []string { return header(probeColumns()) }

// WriteCSV writes probes.csv: one row per probe of every sweep, after the CSVHeader row.
// Every row starts with the run id, the probe's start time, engine and connections; a
// sweep's figures (knee_tx_s, knee_lo_tx_s, …) repeat on each of its probes' rows; a
// figure the file does not have is an empty cell.
func WriteCSV(w io.Writer, f *result.File) error {
	return writeTable(w, probeColumns(), probeRows(f))
}

// secondRow is one second of a probe's per-second series.
type secondRow struct {
	*probeRow
	sec *result.Second
}

// seriesColumns are series.csv's columns. Columns are only ever added at the end.
func seriesColumns() []column[secondRow] {
	pr := func(r secondRow) *probeRow { return r.probeRow }
	when := func(r secondRow) string {
		if r.p.StartedAt.IsZero() {
			return ""
		}
		return timestamp(r.p.StartedAt.Add(time.Duration(r.sec.T) * time.Second))
	}
	cols := identityCols(pr, when, "time_utc")
	cols = append(cols,
		intCol("t_s", func(r secondRow) int64 { return int64(r.sec.T) }),
		textCol("phase", func(r secondRow) string { return r.sec.Phase }),
		intCol("offered_tx", func(r secondRow) int64 { return r.sec.Offered }),
		intCol("committed_tx", func(r secondRow) int64 { return r.sec.Committed }))
	cols = append(cols, failedCols(func(r secondRow) *result.Counts { return &r.sec.Failed })...)
	return append(cols,
		intCol("rejected_tx", func(r secondRow) int64 { return r.sec.Failed[result.PoolTimeout] }),
		numCol("latency_p50_ms", decMs, func(r secondRow) float64 { return r.sec.P50Ms }),
		numCol("latency_p99_ms", decMs, func(r secondRow) float64 { return r.sec.P99Ms }),
		numCol("queue_wait_p99_ms", decMs, func(r secondRow) float64 { return r.sec.QueueWaitP99Ms }),
		intCol("queue_depth_max_tx", func(r secondRow) int64 { return int64(r.sec.QueueDepth) }),
		numCol("sched_lag_max_ms", decMs, func(r secondRow) float64 { return r.sec.SchedLagMs }),
		numCol("sched_lag_p99_ms", decMs, func(r secondRow) float64 { return r.sec.SchedLagP99Ms }))
}

// SeriesCSVHeader is the header row of WriteSeriesCSV (series.csv).
func SeriesCSVHeader() []string { return header(seriesColumns()) }

// WriteSeriesCSV writes series.csv: one row per second of every probe's per-second
// series (warm-up, measured window and drain, by intended arrival time), like pgbench's
// aggregate log: offered, committed, failed by class and rejected arrivals, latency and
// queue-wait percentiles, the queue's depth and the scheduler's lag.
func WriteSeriesCSV(w io.Writer, f *result.File) error {
	var rows []secondRow
	for _, pr := range probeRows(f) {
		for i := range pr.p.Series {
			rows = append(rows, secondRow{probeRow: pr, sec: &pr.p.Series[i]})
		}
	}
	return writeTable(w, seriesColumns(), rows)
}
