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
		"rows_ok", "balance_ok", "wal_bytes_per_tx", "wal_syncs_per_tx", "server_cpu_share", "bottleneck")
}

// WriteCSV writes one row per probe of every sweep, after the CSVHeader row.
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
			row := []string{s.Workload, s.SyncCommit, strconv.Itoa(i + 1), fl(p.TargetRate), p.Verdict, p.Reason,
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
