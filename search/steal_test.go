package search

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/pgceiling/pgceiling/result"
)

// TestJudgeStealAtBreakdown: a neighbour's burst of steal just before a probe broke down
// makes it host_steal even when the probe's average steal is far under StealLimit (the
// 5-minute probe of 2026-12-07 that collapsed 261 s in, with 17.6 % stolen in the 5 s
// before, and 0.5 % over the probe); the same burst well before the breakdown, after it,
// or a low steal throughout leaves the failure the server's, and a pass stays a pass.
func TestJudgeStealAtBreakdown(t *testing.T) {
	// A checkpoint-like stall halves the capacity from measured second 40 (t = 45) for
	// 10 s: at 900 tx/s of 1,000 the queue passes the 1 s pool wait a second or two later.
	s := &sim{C: 1000, Seed: 3, Warmup: 5, Duration: 60, StallAt: 45, StallFor: 10, StallFactor: 0.5}
	cfg := Config{MaxErrorRate: 0.001}
	failing, err := s.Probe(context.Background(), 900)
	if err != nil {
		t.Fatal(err)
	}
	at, ok := failing.Breakdown(cfg.MaxErrorRate)
	if !ok || at < 40 || at > 43 {
		t.Fatalf("breakdown of the stalled probe: second %d, %v; want 40-43 (the stall starts at measured second 40)", at, ok)
	}
	burst := func(from, to int, share float64) []float64 {
		series := make([]float64, 60)
		for i := from; i <= to && i < len(series); i++ {
			series[i] = share
		}
		return series
	}
	for _, tc := range []struct {
		name   string
		rate   float64
		series []float64
		want   result.Verdict
	}{
		{"a 20 % burst in the 12 s up to the breakdown", 900, burst(at-11, at, 0.2), result.HostSteal},
		{"just over the onset limit over the lead", 900, burst(at-result.StealLeadS+1, at, result.StealOnsetLimit+0.001), result.HostSteal},
		{"just under it", 900, burst(at-result.StealLeadS+1, at, result.StealOnsetLimit-0.001), result.Fail},
		{"the burst ended 10 s before the lead began", 900, burst(at-result.StealLeadS-20, at-result.StealLeadS-10, 0.2), result.Fail},
		{"the burst began after the breakdown", 900, burst(at+1, at+12, 0.2), result.Fail},
		{"4 % throughout", 900, burst(0, 59, 0.04), result.Fail},
		{"a pass under the same burst", 300, burst(30, 41, 0.2), result.Pass},
	} {
		p := failing
		if tc.rate != 900 {
			if p, err = s.Probe(context.Background(), tc.rate); err != nil {
				t.Fatal(err)
			}
		}
		q := *p
		mean := 0.0
		for _, v := range tc.series {
			mean += v / float64(len(tc.series))
		}
		if mean >= result.StealLimit {
			t.Fatalf("%s: the probe's average steal %.3f is not under StealLimit: the case would not test the burst", tc.name, mean)
		}
		q.Observation = &result.Observation{HostStealShare: mean, HostStealSeries: tc.series}
		v, why := Judge(&q, cfg)
		if v != tc.want {
			t.Errorf("%s: %s (%s), want %s", tc.name, v, why, tc.want)
		}
		if v == result.HostSteal && !strings.Contains(why, fmt.Sprintf("up to measured second %d", at)) {
			t.Errorf("%s: reason %q does not name the breakdown's second %d", tc.name, why, at)
		}
	}
}
