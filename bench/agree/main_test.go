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
	if err != nil || len(ps) != 2 || ps[0] != (probe{pair: 1, client: "pgceiling", rate: 1500, pass: true}) || ps[1].pass {
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
	return simulateAt(rng, 1600, pairs, delta, drift, b, step)
}

// simulateAt is simulate with the server's mid-run level at level instead of 1600.
func simulateAt(rng *rand.Rand, level float64, pairs int, delta, drift, b, step float64) []probe {
	var ps []probe
	n := 2 * pairs
	for i := 1; i <= pairs; i++ {
		order := []string{"pgceiling", "pgbench"}
		if i%2 == 0 {
			order = []string{"pgbench", "pgceiling"}
		}
		for _, c := range order {
			r := math.Round(nextRate(ps, c, 0.75*level, step))
			tau := float64(len(ps))/float64(n-1) - 0.5
			l50 := math.Log(level) + drift*tau
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

// TestFitOneRun: with one run, maximizing the profile likelihood over δ (fit) finds the
// ratio the one-slope logistic (design without δ) gives in closed form: the two are the
// same model.
func TestFitOneRun(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 9))
	for range 20 {
		ps := simulate(rng, 40, math.Log(0.97), math.Log(1.15), 20, 0.04)
		x, y := design(ps, nil)
		beta, _, err := logistic(x, y)
		if err != nil {
			t.Fatalf("logistic: %v", err)
		}
		f, err := fit(ps)
		if err != nil {
			t.Fatalf("fit: %v", err)
		}
		if want := -beta[2] / beta[3]; math.Abs(f.delta-want) > 1e-5 {
			t.Fatalf("fit's δ %.6f, the one-slope logistic's %.6f", f.delta, want)
		}
		if len(f.runs) != 1 || !(f.lo < f.delta && f.delta < f.hi) {
			t.Fatalf("fit = %+v", f)
		}
	}
}

// pooled simulates two sessions on one machine that differ as this one's nights did:
// the second 30 % faster and with a pass probability twice as steep, each drifting
// within itself; the runs are numbered 0 and 1.
func pooled(rng *rand.Rand, pairs int, delta float64) []probe {
	a := simulateAt(rng, 1600, pairs, delta, math.Log(1.15), 12, 0.04)
	b := simulateAt(rng, 2100, pairs, delta, math.Log(0.9), 25, 0.04)
	for i := range b {
		b[i].run = 1
	}
	return append(a, b...)
}

// TestFitPooledCoverage: two runs of 40 pairs at levels 30 % apart, with their own
// slopes and drifts, pooled: the interval holds the true ratio in 84-96 % of 200 pooled
// fits (±3 standard deviations of a correct 90 % interval), the estimate is unbiased to
// 0.5 %, and the pooled interval is narrower than the steeper run's alone in most fits.
func TestFitPooledCoverage(t *testing.T) {
	rng := rand.New(rand.NewPCG(17, 4))
	const reps = 200
	delta := math.Log(0.97)
	covered, narrower, sum := 0, 0, 0.0
	for range reps {
		ps := pooled(rng, 40, delta)
		f, err := fit(ps)
		if err != nil {
			t.Fatalf("fit: %v", err)
		}
		if len(f.runs) != 2 || f.runs[0].r50bench > f.runs[1].r50bench {
			t.Fatalf("runs %+v: want two, the second faster", f.runs)
		}
		if f.lo <= delta && delta <= f.hi {
			covered++
		}
		sum += f.delta
		g, err := fit(ps[80:])
		if err != nil {
			t.Fatalf("fit of the second run: %v", err)
		}
		if f.hi-f.lo < g.hi-g.lo {
			narrower++
		}
	}
	share := float64(covered) / reps
	t.Logf("covered %d of %d; mean estimate %.4f (true %.4f); pooled narrower than the second run alone in %d", covered, reps, sum/reps, delta, narrower)
	if share < 0.84 || share > 0.96 {
		t.Errorf("the 90 %% interval held the true ratio in %.1f %% of pooled fits", 100*share)
	}
	if math.Abs(sum/reps-delta) > 0.005 {
		t.Errorf("mean estimate %.4f, true %.4f", sum/reps, delta)
	}
	if narrower < reps*3/4 {
		t.Errorf("the pooled interval was narrower than one run's in only %d of %d fits", narrower, reps)
	}
}

// TestFitPooledRunUnusable: a run that cannot be fitted on its own is named.
func TestFitPooledRunUnusable(t *testing.T) {
	rng := rand.New(rand.NewPCG(2, 2))
	ps := pooled(rng, 20, 0)
	for i := range ps {
		if ps[i].run == 1 && ps[i].client == "pgbench" {
			ps[i].pass = true
		}
	}
	if _, err := fit(ps); err == nil || !strings.Contains(err.Error(), "run 2: every pgbench probe passed") {
		t.Fatalf("fit with run 2's pgbench always passing: err = %v", err)
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
// show agreement; clients 30 % apart contradict it; pooled runs are each named.
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
		if err := report(&out, simulate(rng, 200, tc.delta, 0, 25, 0.04), []string{"sim"}); err != nil {
			t.Fatalf("report: %v", err)
		}
		if !strings.Contains(out.String(), tc.want) || !strings.Contains(out.String(), "pgceiling / pgbench: ") {
			t.Errorf("report for ratio %.2f:\n%s\nwant %q", math.Exp(tc.delta), out.String(), tc.want)
		}
	}
	var out bytes.Buffer
	if err := report(&out, pooled(rng, 40, 0), []string{"night/rows-oltp", "morning/rows-oltp"}); err != nil {
		t.Fatalf("report of two runs: %v", err)
	}
	for _, want := range []string{"run 1, night/rows-oltp:", "run 2, morning/rows-oltp:", "fit of 2 runs", "  run 2: rate passed half the time", "pgceiling / pgbench: "} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("report of two runs:\n%s\nwant %q", out.String(), want)
		}
	}
}

// TestFitRecorded: the staircases recorded on 2026-12-07 (testdata, one directory per
// run, docs/figures.md "Agreement with pgbench") read back and pool: for each workload
// the pooled interval is narrower than either run's alone and holds both runs' own
// estimates.
func TestFitRecorded(t *testing.T) {
	for _, wl := range []string{"oltp", "transfer"} {
		var all []probe
		var alone []fitted
		for r, dir := range []string{"2026-12-07-0459", "2026-12-07-1041"} {
			ps, err := readRows("testdata/"+dir+"/rows-"+wl, false)
			if err != nil {
				t.Fatal(err)
			}
			f, err := fit(ps)
			if err != nil {
				t.Fatalf("%s %s: %v", wl, dir, err)
			}
			alone = append(alone, f)
			for i := range ps {
				ps[i].run = r
			}
			all = append(all, ps...)
		}
		f, err := fit(all)
		if err != nil {
			t.Fatalf("%s pooled: %v", wl, err)
		}
		t.Logf("%s pooled: %.3f (%.3f-%.3f)", wl, math.Exp(f.delta), math.Exp(f.lo), math.Exp(f.hi))
		for i, a := range alone {
			if f.hi-f.lo >= a.hi-a.lo {
				t.Errorf("%s: pooled interval %.4f wide, run %d's alone %.4f", wl, f.hi-f.lo, i+1, a.hi-a.lo)
			}
			if a.delta < f.lo || a.delta > f.hi {
				t.Errorf("%s: run %d's estimate %.4f outside the pooled interval %.4f-%.4f", wl, i+1, a.delta, f.lo, f.hi)
			}
		}
	}
}

// TestFitRecordedAA: the A/A checks recorded on 2026-12-07 (bench/staircase_vs_pgbench.sh
// --aa pgbench, then --aa pgceiling: one client in both staircases) fit ratios whose
// intervals hold 1, as one client against itself must.
func TestFitRecordedAA(t *testing.T) {
	for _, dir := range []string{"2026-12-07-1926-aa", "2026-12-07-2050-aa"} {
		ps, err := readRows("testdata/"+dir+"/rows-transfer", false)
		if err != nil {
			t.Fatal(err)
		}
		f, err := fit(ps)
		if err != nil {
			t.Fatalf("%s: %v", dir, err)
		}
		t.Logf("A/A %s: %.3f (%.3f-%.3f)", dir, math.Exp(f.delta), math.Exp(f.lo), math.Exp(f.hi))
		if f.lo > 0 || f.hi < 0 {
			t.Errorf("A/A fit %s: ratio %.3f (%.3f-%.3f); want an interval that holds 1", dir, math.Exp(f.delta), math.Exp(f.lo), math.Exp(f.hi))
		}
	}
}
