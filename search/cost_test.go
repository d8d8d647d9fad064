package search

import (
	"context"
	"testing"
	"time"
)

// TestSearchCost measures what the early stops and the calibration save: the
// probe-minutes (warm-up and calibration included) a search spends to reach a 5 % bracket
// on the simulated server with the standard profile's probe length (30 s warm-up, 7 min
// measured), against the plain search (from DefaultStartRate, ×2, every probe run in
// full, no calibration). The simulated pool never rejects (NoReject): overload shows only
// as a queue wait that keeps rising, so the saving comes from the trend stop, not from the
// error budget. Run with -v to see the figures. Target: at most half.
func TestSearchCost(t *testing.T) {
	const seeds = 60
	var with, without, abortOnly, calOnly float64
	var nWith, nWithout, cutByTrend int
	for seed := uint64(1); seed <= seeds; seed++ {
		mk := func() *sim {
			s := newSim(seed)
			s.Warmup, s.Duration, s.NoReject = 30, 420, true
			s.StopEvery = 5 // the driver calls StopIf every second; every 5 s keeps the test quick
			return s
		}
		cfg := Config{MaxErrorRate: 0.001, Precision: 0.05, Duration: 420 * time.Second, Warmup: 30 * time.Second}
		plain := cfg
		plain.NoEarlyAbort = true
		run := func(p Prober, cfg Config) float64 {
			sw, err := Run(context.Background(), p, cfg, nil)
			if err != nil {
				t.Fatal(err)
			}
			if !sw.Converged {
				t.Fatalf("seed %d: not converged (%q)", seed, sw.Stop)
			}
			return sw.ProbeMinutes
		}
		a, err := Run(context.Background(), plainSim{mk()}, plain, nil)
		if err != nil || !a.Converged {
			t.Fatalf("seed %d: plain search: %v, stop %q", seed, err, a.Stop)
		}
		b, err := Run(context.Background(), mk(), cfg, nil) // calibrates (ShortProber), stops early
		if err != nil || !b.Converged {
			t.Fatalf("seed %d: fast search: %v, stop %q", seed, err, b.Stop)
		}
		if b.Knee < 0.9*a.Knee || b.Knee > 1.1*a.Knee {
			t.Errorf("seed %d: knee %.0f with calibration and early stops, %.0f plain", seed, b.Knee, a.Knee)
		}
		for _, p := range b.Probes {
			if p.CutBy == "trend" {
				cutByTrend++
			}
		}
		abortOnly += run(plainSim{mk()}, cfg)
		calOnly += run(mk(), plain)
		without += a.ProbeMinutes
		with += b.ProbeMinutes
		nWithout += len(a.Probes)
		nWith += len(b.Probes)
	}
	ratio := with / without
	t.Logf("simulated server, %d seeds, capacity 1,000-30,000 tx/s, no rejections (overload = rising queue wait), 30 s warm-up + 420 s probes, 5 %% bracket:", seeds)
	t.Logf("  plain (start %.0f/s, x2, full-length probes): %.1f probe-minutes, %.1f probes per search",
		DefaultStartRate, without/seeds, float64(nWithout)/seeds)
	t.Logf("  early stops only:                          %.1f probe-minutes", abortOnly/seeds)
	t.Logf("  calibration only:                          %.1f probe-minutes", calOnly/seeds)
	t.Logf("  calibration + early stops:                 %.1f probe-minutes, %.1f probes per search, %d cut by the trend",
		with/seeds, float64(nWith)/seeds, cutByTrend)
	t.Logf("  ratio %.2f (target <= 0.5)", ratio)
	if ratio > 0.5 {
		t.Errorf("calibration + early stops cost %.2f of the plain search, want <= 0.5", ratio)
	}
	if cutByTrend == 0 {
		t.Errorf("no probe was cut by the trend stop")
	}
}
