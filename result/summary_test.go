package result

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"
)

func readFixture(t *testing.T, name string) *File {
	t.Helper()
	f, err := Read("../report/testdata/" + name)
	if err != nil {
		t.Fatalf("fixture %s: %v", name, err)
	}
	return f
}

func TestSummarizeSearch(t *testing.T) {
	f := readFixture(t, "search.json")
	s := Summarize(f, nil)
	if s.Command != "search" || s.Run != nil || len(s.Sweeps) != len(f.Sweeps) || !s.Passed || s.ServerVersion != f.Server.Version {
		t.Fatalf("Summarize(search.json) = %+v; want one brief per sweep, no run, passed, the server's version", s)
	}
	for i, b := range s.Sweeps {
		sw := &f.Sweeps[i]
		k := sw.KneeProbe()
		if k == nil {
			t.Fatalf("sweep %d: no probe at the knee %v", i, sw.Knee)
		}
		if b.KneeTxS != sw.Knee || b.BracketLoTxS != sw.Bracket.Lo || b.BracketHiTxS != sw.Bracket.Hi ||
			b.Interval == nil || b.Interval.LoTxS != sw.Interval.Lo || b.Interval.HiTxS != sw.Interval.Hi ||
			b.Interval.Level != sw.Interval.Level || b.P99AtKneeMs != k.Latency.P99 || b.Bottleneck != sw.Bottleneck ||
			b.Probes != len(sw.Probes) {
			t.Errorf("sweep %s sync=%s: brief %+v does not match the sweep (knee %v, bracket %+v, interval %+v, p99 %v)",
				sw.Workload, sw.SyncCommit, b, sw.Knee, sw.Bracket, sw.Interval, k.Latency.P99)
		}
	}
	// The JSON names carry their units.
	js, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{`"knee_tx_s":975`, `"p99_at_knee_ms":`, `"lo_tx_s":936`, `"bracket_hi_tx_s":1000`, `"summary_version":1`} {
		if !strings.Contains(string(js), key) {
			t.Errorf("summary JSON lacks %s: %s", key, js)
		}
	}
}

func TestSummarizeRunAndThresholds(t *testing.T) {
	f := readFixture(t, "run.json")
	p := &f.Sweeps[0].Probes[0]
	s := Summarize(f, nil)
	if s.Run == nil || len(s.Sweeps) != 0 || s.Run.P99Ms != p.Latency.P99 || s.Run.Committed != p.Committed ||
		s.Run.ErrorRate != p.ErrorRate() || s.Run.AchievedTxS != p.AchievedRate {
		t.Fatalf("Summarize(run.json).Run = %+v; want the probe's figures", s.Run)
	}
	for _, tc := range []struct {
		maxErr float64
		slo    time.Duration
		want   []bool
	}{
		{-1, 0, nil},
		{1, 0, []bool{true}},
		{p.ErrorRate() / 2, 0, []bool{p.ErrorRate() == 0}},
		{-1, time.Duration(p.Latency.P99*2) * time.Millisecond, []bool{true}},
		{-1, time.Duration(p.Latency.P99/2*1000) * time.Microsecond, []bool{false}},
		{1, time.Microsecond, []bool{true, false}},
	} {
		th := Thresholds(p, tc.maxErr, tc.slo)
		if len(th) != len(tc.want) {
			t.Errorf("Thresholds(max error %v, slo %v) = %+v; want %d", tc.maxErr, tc.slo, th, len(tc.want))
			continue
		}
		all := true
		for i, w := range tc.want {
			all = all && w
			if th[i].OK != w {
				t.Errorf("Thresholds(max error %v, slo %v)[%d] = %+v; want ok %v", tc.maxErr, tc.slo, i, th[i], w)
			}
		}
		if got := Summarize(f, th).Passed; got != (all && len(p.Checks.Problems) == 0) {
			t.Errorf("Summarize with thresholds %+v: passed %v", th, got)
		}
	}
}

// TestFlushMs: the WAL flush time at the knee is the sync time over the syncs of every
// passing probe at the knee rate (the hold too), and 0 when none recorded it.
func TestFlushMs(t *testing.T) {
	probe := func(rate float64, v Verdict, syncs int64, ms float64, hold bool) Probe {
		return Probe{TargetRate: rate, Verdict: v, Hold: hold, Observation: &Observation{WAL: WAL{Syncs: syncs, SyncMs: ms}}}
	}
	sw := Sweep{Knee: 1000, Probes: []Probe{
		probe(1000, Pass, 100, 50, false),
		probe(1200, Fail, 100, 900, false), // above the knee: not counted
		probe(1000, Fail, 100, 700, false), // at the knee but failed: not counted
		probe(800, Pass, 100, 10, false),   // below the knee
		probe(1000, Pass, 300, 90, true),   // the hold
		probe(1000, Pass, 0, 0, false),     // no syncs recorded
		{TargetRate: 1000, Verdict: Pass},  // no observation
	}}
	if got, want := sw.FlushMs(), (50.0+90)/(100+300); math.Abs(got-want) > 1e-12 {
		t.Errorf("FlushMs = %v, want %v", got, want)
	}
	if got := BriefOf(&sw).FlushAtKneeMs; got != sw.FlushMs() {
		t.Errorf("the summary's wal_flush_at_knee_ms = %v, want %v", got, sw.FlushMs())
	}
	sw.Probes[0].Observation.WAL.SyncMs, sw.Probes[4].Observation.WAL.SyncMs = 0, 0 // track_wal_io_timing off
	if got := sw.FlushMs(); got != 0 {
		t.Errorf("FlushMs without sync times = %v, want 0", got)
	}
	if got := (&Sweep{}).FlushMs(); got != 0 {
		t.Errorf("FlushMs of a sweep without a knee = %v, want 0", got)
	}
	if got := (WAL{Syncs: 4, SyncMs: 2}).MsPerSync(); got != 0.5 {
		t.Errorf("MsPerSync = %v, want 0.5", got)
	}
}
