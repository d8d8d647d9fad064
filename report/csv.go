package report

import (
	"encoding/csv"
	"fmt"
	"io"
	"strconv"

	"github.com/pgceiling/pgceiling/result"
)

// CSVHeader is the header row of WriteCSV: stable columns, one row per probe, rates in
// transactions per second and latencies in milliseconds. Columns are only ever added at
// the end, so scripts that read the file by position keep working.
func CSVHeader() []string {
	h := []string{"workload", "sync_commit", "probe", "target_rate", "verdict", "reason", "knee",
		"scheduled", "committed", "rejected"}
	for c := result.Class(0); c < result.NumClasses; c++ {
		if c != result.PoolTimeout { // rejected is the pool_timeout count
			h = append(h, "failed_"+c.String())
		}
	}
	return append(h, "error_rate", "achieved_rate", "measured_s",
		"latency_p50_ms", "latency_p90_ms", "latency_p99_ms", "latency_p999_ms", "latency_max_ms", "latency_mean_ms",
		"service_p99_ms", "queue_wait_p99_ms", "cut_short", "driver_limited", "interrupted",
		"rows_ok", "balance_ok", "wal_bytes_per_tx", "wal_syncs_per_tx", "server_cpu_share", "bottleneck",
		"knee_lo_txs", "knee_hi_txs", "interval_level", "bottleneck_rate",
		"committed_in_window", "drain_committed", "cut_by", "sched_lag_p99_ms",
		"fraud_rows_p50", "fraud_rows_p99", "fraud_rows_p50_first_third", "fraud_rows_p50_last_third",
		"backfill_rows", "backfill_s", "restore_s",
		"steady_series", "steady_slope_ms_per_s", "steady_slope_lo_ms_per_s", "steady_slope_hi_ms_per_s", "steady_verdict",
		"wait_growth_event", "wait_growth_first_share", "wait_growth_last_share")
}

// WriteCSV writes one row per probe of every sweep, after the CSVHeader row. A sweep's
// figures (knee_lo_txs, knee_hi_txs, interval_level, bottleneck_rate) repeat on each of
// its probes' rows; a figure the file does not have is an empty cell.
func WriteCSV(w io.Writer, f *result.File) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(CSVHeader()); err != nil {
		return fmt.Errorf("csv report: %w", err)
	}
	fl := func(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }
	in := func(v int64) string { return strconv.FormatInt(v, 10) }
	for si := range f.Sweeps {
		s := &f.Sweeps[si]
		for i := range s.Probes {
			p := &s.Probes[i]
			knee := p.Verdict == result.Pass && p.TargetRate == s.Knee
			row := []string{s.Workload, string(s.SyncCommit), strconv.Itoa(i + 1), fl(p.TargetRate), string(p.Verdict), p.Reason,
				strconv.FormatBool(knee), in(p.Scheduled), in(p.Committed), in(p.Rejected)}
			for c := result.Class(0); c < result.NumClasses; c++ {
				if c != result.PoolTimeout {
					row = append(row, in(p.Failed[c]))
				}
			}
			bal := ""
			if p.Checks.BalanceOK != nil {
				bal = strconv.FormatBool(*p.Checks.BalanceOK)
			}
			var walB, walS, cpu, bn string
			if o := p.Observation; o != nil {
				walB, walS, cpu, bn = fl(o.WAL.BytesPerTx), fl(o.WAL.SyncsPerTx), fl(o.ServerCPUShare), o.Bottleneck
			}
			row = append(row, strconv.FormatFloat(p.ErrorRate(), 'f', 6, 64), fl(p.AchievedRate), fl(p.MeasuredS),
				fl(p.Latency.P50), fl(p.Latency.P90), fl(p.Latency.P99), fl(p.Latency.P999), fl(p.Latency.Max), fl(p.Latency.Mean),
				fl(p.Service.P99), fl(p.QueueWait.P99), strconv.FormatBool(p.CutShort), strconv.FormatBool(p.DriverLimited),
				strconv.FormatBool(p.Interrupted), strconv.FormatBool(p.Checks.RowsOK), bal, walB, walS, cpu, bn)
			// The sweep's knee interval and bottleneck rate, repeated on each of its rows.
			var lo, hi, level, bnRate string
			if iv := s.Interval; iv != nil {
				lo, hi, level = fl(iv.Lo), fl(iv.Hi), fl(iv.Level)
			}
			if s.BottleneckRate > 0 {
				bnRate = fl(s.BottleneckRate)
			}
			row = append(row, lo, hi, level, bnRate, in(p.CommittedInWindow), in(p.DrainCommitted), p.CutBy, fl(p.SchedLagP99Ms))
			var fr [4]string
			if c := p.FraudCheck; c != nil {
				fr = [4]string{fl(c.P50), fl(c.P99), fl(c.FirstP50), fl(c.LastP50)}
			}
			row = append(row, fr[:]...)
			var bfRows, bfS, rsS string
			if b := p.Backfill; b != nil {
				bfRows, bfS = in(b.Rows), fl(b.Seconds)
			}
			if r := p.Restore; r != nil {
				rsS = fl(r.Seconds)
			}
			row = append(row, bfRows, bfS, rsS)
			var st [5]string
			if v := p.Steady; v != nil {
				st = [5]string{v.Series, fl(v.SlopeMsPerS), fl(v.SlopeLo), fl(v.SlopeHi), v.Verdict}
			}
			row = append(row, st[:]...)
			var wg [3]string
			if o := p.Observation; o != nil && o.WaitGrowth != nil {
				wg = [3]string{o.WaitGrowth.Event, fl(o.WaitGrowth.FirstShare), fl(o.WaitGrowth.LastShare)}
			}
			row = append(row, wg[:]...)
			if err := cw.Write(row); err != nil {
				return fmt.Errorf("csv report: %w", err)
			}
		}
	}
	cw.Flush()
	if err := cw.Error(); err != nil {
		return fmt.Errorf("csv report: %w", err)
	}
	return nil
}
