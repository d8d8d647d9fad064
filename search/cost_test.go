package search

import (
	"context"
	"testing"
	"time"
)

// TestSearchCost measures what early abort and calibration save: the probe-minutes
// (warm-up and calibration included) a search spends to reach a 5 % bracket on the
// simulated server with the standard profile's probe length (30 s warm-up, 7 min
// measured), against the same search starting from DefaultStartRate with every probe run
// in full. Run with -v to see the figures. Target: at most half.
func TestSearchCost(t *testing.T) {
	const seeds = 200
	var with, without, abortOnly, calOnly float64
	var nWith, nWithout int
	for seed := uint64(1); seed <= seeds; seed++ {
		mk := func() *sim {
			s := newSim(seed)
			s.Warmup, s.Duration = 30, 420
			return s
		}
		s := mk()
		cfg := Config{MaxErrorRate: 0.001, Precision: 0.05, Duration: 420 * time.Second}
		plain := cfg
		plain.NoEarlyAbort = true
		a, err := Run(context.Background(), s, plain, nil)
		if err != nil {
			t.Fatal(err)
		}
		s = mk()
		fast := cfg
		fast.Calibrate = s.calibrator(30) // a 30 s saturating calibration probe
		b, err := Run(context.Background(), s, fast, nil)
		if err != nil {
			t.Fatal(err)
		}
		if !a.Converged || !b.Converged {
			t.Fatalf("seed %d: not converged (%q, %q)", seed, a.Stop, b.Stop)
		}
		ab, err := Run(context.Background(), mk(), cfg, nil)
		if err != nil {
			t.Fatal(err)
		}
		s = mk()
		cal := plain
		cal.Calibrate = s.calibrator(30)
		cb, err := Run(context.Background(), s, cal, nil)
		if err != nil {
			t.Fatal(err)
		}
		abortOnly += ab.ProbeMinutes
		calOnly += cb.ProbeMinutes
		without += a.ProbeMinutes
		with += b.ProbeMinutes
		nWithout += len(a.Probes)
		nWith += len(b.Probes)
	}
	ratio := with / without
	t.Logf("simulated server, %d seeds, capacity 1,000-30,000 tx/s, 30 s warm-up + 420 s probes, 5 %% bracket:", seeds)
	t.Logf("  plain (start %.0f/s, x2, full-length probes): %.1f probe-minutes, %.1f probes per search",
		DefaultStartRate, without/seeds, float64(nWithout)/seeds)
	t.Logf("  early abort only:                          %.1f probe-minutes", abortOnly/seeds)
	t.Logf("  calibration only:                          %.1f probe-minutes", calOnly/seeds)
	t.Logf("  calibration + early abort:                 %.1f probe-minutes, %.1f probes per search",
		with/seeds, float64(nWith)/seeds)
	t.Logf("  ratio %.2f (target <= 0.5)", ratio)
	if ratio > 0.5 {
		t.Errorf("calibration + early abort cost %.2f of the plain search, want <= 0.5", ratio)
	}
}
