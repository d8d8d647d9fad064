package main

import (
	"bytes"
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// TestNextRate: a staircase starts at the start rate, moves by 4 steps until its first
// reversal, by 2 until its second and by 1 after, up after a pass and down after a fail,
// and only the named client's probes count.
func TestNextRate(t *testing.T) {
	var ps []probe
	add := func(client string, rate float64, pass bool) {
		ps = append(ps, probe{client: client, rate: rate, pass: pass})
	}
	if got := nextRate(ps, "pgceiling", 1000, 0.05); got != 1000 {
		t.Fatalf("first rate %v, want the start 1000", got)
	}
	add("pgceiling", 1000, true)
	add("pgbench", 1000, false) // another client's: ignored
	if got := nextRate(ps, "pgceiling", 1000, 0.05); math.Abs(got-1200) > 1e-9 {
		t.Fatalf("after a pass before any reversal: %v, want 1000·1.2", got)
	}
	add("pgceiling", 1200, false) // first reversal: step 2·0.05
	if got := nextRate(ps, "pgceiling", 1000, 0.05); math.Abs(got-1200/1.1) > 1e-9 {
		t.Fatalf("after the first reversal: %v, want 1200/1.1", got)
	}
	add("pgceiling", 1091, true) // second reversal: the final step
	if got := nextRate(ps, "pgceiling", 1000, 0.05); math.Abs(got-1091*1.05) > 1e-9 {
		t.Fatalf("after the second reversal: %v, want 1091·1.05", got)
	}
	add("pgceiling", 1146, true)
	if got := nextRate(ps, "pgceiling", 1000, 0.05); math.Abs(got-1146*1.05) > 1e-9 {
		t.Fatalf("a pass after the second reversal: %v, want 1146·1.05", got)
	}
	if got := nextRate(ps, "pgbench", 1000, 0.05); math.Abs(got-1000/1.2) > 1e-9 {
		t.Fatalf("pgbench after one fail: %v, want 1000/1.2", got)
	}
}

func TestParseRows(t *testing.T) {
	ps, err := parseRows(strings.NewReader("# pair client rate pass\n1 pgceiling 1500 1 0.0 1499.2\n\n1 pgbench 1500 0 0.2\n"))
	if err != nil || len(ps) != 2 || ps[0] != (probe{1, "pgceiling", 1500, true}) || ps[1].pass {
		t.Fatalf("parseRows = %+v, %v", ps, err)
	}
	for _, bad := range []string{"1 pgceiling 1500\n", "1 pgceiling x 1\n", "1 pgceiling 1500 yes\n", "1 pgceiling -5 1\n", "a pgceiling 5 1\n"} {
		if _, err := parseRows(strings.NewReader(bad)); err == nil || !strings.Contains(err.Error(), "line 1") {
			t.Errorf("parseRows(%q) err = %v, want a line-1 error", bad, err)
		}
	}
}

// simulate runs the interleaved staircases against a server whose 30 s pass probability
// at rate r is σ(b·(ln r50(τ, client) − ln r)), r50 = 1600·exp(drift·τ + δ·[pgceiling]):
// ABBA order, pairs pairs, starting 25 % below.
func simulate(rng *rand.Rand, pairs int, delta, drift, b, step float64) []probe {
	var ps []probe
	n := 2 * pairs
	for i := 1; i <= pairs; i++ {
		order := []string{"pgceiling", "pgbench"}
		if i%2 == 0 {
			order = []string{"pgbench", "pgceiling"}
		}
		for _, c := range order {
			r := math.Round(nextRate(ps, c, 1200, step))
			tau := float64(len(ps))/float64(n-1) - 0.5
			l50 := math.Log(1600) + drift*tau
			if c == "pgceiling" {
				l50 += delta
			}
			pass := rng.Float64() < 1/(1+math.Exp(-b*(l50-math.Log(r))))
			ps = append(ps, probe{pair: i, client: c, rate: r, pass: pass})
		}
	}
	return ps
}

// TestFitCoverage: over simulated runs with a known ratio, a server that drifts by −15 %
// during the run and a pass probability that goes from 73 % to 27 % over ±4 % of the
// rate, the 90 % interval (cut at the χ²₁ 95 % quantile, see fit) holds the true ratio in
// 84-96 % of 300 runs (the binomial
// range of a correct 90 % interval, ±3 standard deviations), the estimate is unbiased to
// 0.5 %, and 40 pairs give an interval narrow enough to tell 5 % (median width below
// ±5 %).
func TestFitCoverage(t *testing.T) {
	for _, tc := range []struct {
		name         string
		delta, drift float64
	}{
		{"equal clients", 0, math.Log(0.85)},
		{"pgceiling 6 % higher", math.Log(1.06), math.Log(0.85)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(11, 7))
			const reps = 300
			covered, sum := 0, 0.0
			var widths []float64
			for range reps {
				ps := simulate(rng, 40, tc.delta, tc.drift, 25, 0.04)
				f, err := fit(ps)
				if err != nil {
					t.Fatalf("fit: %v", err)
				}
				if f.lo <= tc.delta && tc.delta <= f.hi {
					covered++
				}
				sum += f.delta
				widths = append(widths, f.hi-f.lo)
			}
			slices.Sort(widths)
			share := float64(covered) / reps
			t.Logf("covered %d of %d; mean estimate %.4f (true %.4f); median width ±%.1f %%", covered, reps, sum/reps, tc.delta, 100*(math.Exp(widths[reps/2]/2)-1))
			if share < 0.84 || share > 0.96 {
				t.Errorf("the 90 %% interval held the true ratio in %.1f %% of runs", 100*share)
			}
			if math.Abs(sum/reps-tc.delta) > 0.005 {
				t.Errorf("mean estimate %.4f, true %.4f", sum/reps, tc.delta)
			}
			if w := widths[reps/2] / 2; w > math.Log(1.05) {
				t.Errorf("median half-width %.3f in ln, wider than 5 %%", w)
			}
		})
	}
}

// TestFitSeparated: passes all below fails, for both clients: no finite fit, said so.
func TestFitSeparated(t *testing.T) {
	var ps []probe
	for i, r := range []float64{1000, 1100, 1300, 1400} {
		for _, c := range []string{"pgceiling", "pgbench"} {
			ps = append(ps, probe{pair: i + 1, client: c, rate: r, pass: r < 1200})
		}
	}
	if _, err := fit(ps); !errors.Is(err, errSeparated) {
		t.Fatalf("fit of separated probes: err = %v, want errSeparated", err)
	}
	if _, err := fit(ps[:3]); err == nil || !strings.Contains(err.Error(), "two probes of each") {
		t.Fatalf("fit of three probes: err = %v", err)
	}
	for i := range ps {
		ps[i].pass = ps[i].client == "pgbench" || ps[i].rate < 1200
	}
	if _, err := fit(ps); err == nil || !strings.Contains(err.Error(), "every pgbench probe passed") {
		t.Fatalf("fit with every pgbench probe passed: err = %v", err)
	}
	for i := range ps {
		ps[i].pass = false
	}
	if _, err := fit(ps); err == nil || !strings.Contains(err.Error(), "every pgceiling probe failed") {
		t.Fatalf("fit with every probe failed: err = %v", err)
	}
}

// TestReport: the printed verdict follows the interval: equal clients with many pairs
// show agreement; clients 30 % apart contradict it.
func TestReport(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 5))
	for _, tc := range []struct {
		delta float64
		want  string
	}{
		{0, "within 5 %: shown"},
		{math.Log(1.3), "within 5 %: contradicted"},
	} {
		var out bytes.Buffer
		if err := report(&out, simulate(rng, 200, tc.delta, 0, 25, 0.04)); err != nil {
			t.Fatalf("report: %v", err)
		}
		if !strings.Contains(out.String(), tc.want) || !strings.Contains(out.String(), "pgceiling / pgbench: ") {
			t.Errorf("report for ratio %.2f:\n%s\nwant %q", math.Exp(tc.delta), out.String(), tc.want)
		}
	}
}
