package report

import (
	"strings"
	"testing"

	"github.com/pgceiling/pgceiling/result"
)

func TestHoldIsReported(t *testing.T) {
	sw := result.Sweep{Workload: "oltp", SyncCommit: "on", Knee: 2300, HoldS: 360, Held: true,
		Interval: &result.Interval{Lo: 2210, Hi: 2480, Level: 0.9},
		Probes: []result.Probe{
			{TargetRate: 2425, Verdict: result.Pass},
			{TargetRate: 2425, Verdict: result.Fail, Hold: true},
			{TargetRate: 2300, Verdict: result.Pass},
			{TargetRate: 2300, Verdict: result.Pass, Hold: true},
		}}
	if got, want := KneeText(sw), "2,300 tx/s (2,210-2,480, 90 %), held 360.0 s"; got != want {
		t.Errorf("KneeText = %q, want %q", got, want)
	}
	note := holdNote(&sw)
	for _, w := range []string{"held for 360.0 s", "holds failed at 2,425 tx/s"} {
		if !strings.Contains(note, w) {
			t.Errorf("hold note %q lacks %q", note, w)
		}
	}
	sw.Held = false
	if got := KneeText(sw); strings.Contains(got, "held") {
		t.Errorf("KneeText of an unheld knee = %q", got)
	}
	if note := holdNote(&sw); !strings.Contains(note, "not held") {
		t.Errorf("hold note of an unheld knee: %q", note)
	}
	if note := holdNote(&result.Sweep{Knee: 100}); note != "" {
		t.Errorf("hold note without a hold step: %q", note)
	}
}

func TestPoolNote(t *testing.T) {
	sw := result.Sweep{Workload: "transfer", SyncCommit: "on", Pool: &result.PoolScan{Conns: 4, Best: 8, Within: 0.97,
		Points: []result.PoolPoint{
			{Conns: 4, Achieved: 1900, Windows: []float64{1850, 1950}, Saturated: true},
			{Conns: 8, Achieved: 1950, Windows: []float64{2000, 1900}, Saturated: true},
			{Conns: 16, Achieved: 1500, Windows: []float64{1500, 1500}},
		}}}
	want := "pool 4 connections (--conns auto; saturated tx/s with every connection busy, mean of 2 windows: " +
		"4: 1,900 · 8: 1,950 · 16: ≥ 1,500); the smallest within 3 % of the best (8)"
	if got := poolNote(&sw); got != want {
		t.Errorf("poolNote =\n %q, want\n %q", got, want)
	}
	// A file from before the way back: one window per pool, no "mean".
	sw.Pool = &result.PoolScan{Conns: 8, Best: 8, Within: 0.9, Points: []result.PoolPoint{
		{Conns: 4, Achieved: 1673, Saturated: true}, {Conns: 8, Achieved: 1889, Saturated: true}}}
	if got, want := poolNote(&sw), "pool 8 connections (--conns auto; saturated tx/s with every connection busy: 4: 1,673 · 8: 1,889)"; got != want {
		t.Errorf("poolNote of a one-window scan = %q, want %q", got, want)
	}
	if got := poolNote(&result.Sweep{}); got != "" {
		t.Errorf("poolNote without a scan = %q", got)
	}
}
