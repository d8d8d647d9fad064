package search

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/pgceiling/pgceiling/result"
)

// judged builds probes with the given verdicts at the given rates.
func judged(rates []float64, verdicts []result.Verdict) []result.Probe {
	ps := make([]result.Probe, len(rates))
	for i, r := range rates {
		ps[i] = result.Probe{TargetRate: r, Verdict: verdicts[i]}
	}
	return ps
}

func TestKneeIntervalSeparated(t *testing.T) {
	P, F := result.Pass, result.Fail
	for _, tc := range []struct {
		name     string
		rates    []float64
		verdicts []result.Verdict
		widen    float64
	}{
		{"bisection from 100", []float64{100, 200, 400, 800, 1600, 1200, 1000, 900, 950, 975},
			[]result.Verdict{P, P, P, P, F, F, F, P, P, F}, 25},
		{"calibrated start", []float64{2400, 2880, 3456, 3168, 3024, 3096}, []result.Verdict{P, P, F, F, P, F}, 72},
		{"single pass, single fail", []float64{1000, 1050}, []result.Verdict{P, F}, 50},
		{"not_steady counts as fail", []float64{1000, 1050, 1025}, []result.Verdict{P, result.NotSteady, F}, 25},
	} {
		ps := judged(tc.rates, tc.verdicts)
		iv := KneeInterval(ps, tc.widen)
		call := fmt.Sprintf("KneeInterval(%s: %v %v, widen %g)", tc.name, tc.rates, tc.verdicts, tc.widen)
		var lo, hi float64 = 0, math.Inf(1) // the bracket: highest pass, lowest fail
		rmin, rmax := math.Inf(1), 0.0
		for i, r := range tc.rates {
			rmin, rmax = min(rmin, r), max(rmax, r)
			if tc.verdicts[i] == P {
				lo = max(lo, r)
			} else {
				hi = min(hi, r)
			}
		}
		if iv == nil {
			t.Errorf("%s = nil", call)
			continue
		}
		mid := (lo + hi) / 2
		if iv.Lo > mid || iv.Hi < mid || iv.Lo < rmin-tc.widen-1e-6 || iv.Hi > rmax+tc.widen+1e-6 ||
			iv.Midpoint < iv.Lo || iv.Midpoint > iv.Hi || iv.Level != IntervalLevel || iv.Probes != len(tc.rates) || iv.Method == "" {
			t.Errorf("%s = %+v; want an interval around the bracket midpoint %.1f within [%.0f, %.0f], holding its midpoint",
				call, *iv, mid, rmin-tc.widen, rmax+tc.widen)
		}
	}
	// Many separated probes narrow it to about the gap.
	var rates []float64
	var vs []result.Verdict
	for r := 900.0; r <= 1100; r += 10 {
		rates = append(rates, r)
		if r <= 1000 {
			vs = append(vs, P)
		} else {
			vs = append(vs, F)
		}
	}
	if iv := KneeInterval(judged(rates, vs), 10); iv == nil || iv.Lo < 960 || iv.Hi > 1040 {
		t.Errorf("KneeInterval(21 separated probes 900..1100, gap 1000-1010) = %+v; want within [960, 1040]", iv)
	}
}

func TestKneeIntervalNone(t *testing.T) {
	for _, tc := range []struct {
		name string
		ps   []result.Probe
	}{
		{"no probes", nil},
		{"passes only", judged([]float64{100, 200}, []result.Verdict{result.Pass, result.Pass})},
		{"fails only", judged([]float64{100, 200}, []result.Verdict{result.Fail, result.NotSteady})},
		{"fault and driver_limited do not count", judged([]float64{100, 200, 300}, []result.Verdict{result.Pass, result.Fault, result.DriverLimited})},
		{"interrupted does not count", []result.Probe{{TargetRate: 100, Verdict: result.Pass}, {TargetRate: 200, Verdict: result.Fail, Interrupted: true}}},
	} {
		if iv := KneeInterval(tc.ps, 10); iv != nil {
			t.Errorf("KneeInterval(%s) = %+v, want nil", tc.name, *iv)
		}
	}
}

// TestKneeIntervalCoverage: on data simulated from a known logistic the 90 % interval
// covers the true midpoint in about 90 % of seeded replications.
func TestKneeIntervalCoverage(t *testing.T) {
	const reps, m, scale = 200, 1000.0, 30.0
	covered := 0
	for seed := uint64(1); seed <= reps; seed++ {
		rng := rand.New(rand.NewPCG(seed, 3))
		var ps []result.Probe
		for i := 0; i < 60; i++ {
			r := math.Round(850 + 300*rng.Float64())
			v := result.Fail
			if rng.Float64() < 1/(1+math.Exp((r-m)/scale)) {
				v = result.Pass
			}
			ps = append(ps, result.Probe{TargetRate: r, Verdict: v})
		}
		iv := KneeInterval(ps, 25)
		if iv != nil && iv.Lo <= m && m <= iv.Hi {
			covered++
		}
	}
	share := float64(covered) / reps
	t.Logf("90 %% interval covered the true midpoint in %d of %d replications (%.2f)", covered, reps, share)
	if share < 0.8 || share > 0.97 {
		t.Errorf("KneeInterval coverage of m = %.0f (scale %.0f, 60 probes in 850..1150) = %.2f over %d seeds; want 0.80..0.97",
			m, scale, share, reps)
	}
}

// TestKneeIntervalNoisyMonotone: monotone data with noise near the edge (a fail below a
// pass) gives a finite interval around the crossing; a dozen noisy probes say less.
func TestKneeIntervalNoisyMonotone(t *testing.T) {
	P, F := result.Pass, result.Fail
	var rates []float64
	var vs []result.Verdict
	for r := 900.0; r <= 1100; r += 10 {
		for k := 0; k < 2; k++ {
			v := P
			if r > 1000 {
				v = F
			}
			if (r == 980 || r == 1020) && k == 0 { // noise: a fail below the edge, a pass above
				v = map[result.Verdict]result.Verdict{P: F, F: P}[v]
			}
			rates, vs = append(rates, r), append(vs, v)
		}
	}
	iv := KneeInterval(judged(rates, vs), 10)
	if iv == nil || iv.Lo > 1000 || iv.Hi < 1000 || iv.Lo < 940 || iv.Hi > 1060 || iv.Lo > iv.Midpoint || iv.Midpoint > iv.Hi {
		t.Errorf("KneeInterval(42 probes 900..1100, edge 1000, flipped at 980 and 1020) = %+v; want Lo <= midpoint <= Hi around 1000, within [940, 1060]", iv)
	}
	rates = []float64{500, 1000, 2000, 1500, 1250, 1125, 1190, 1160, 1160, 1190, 1125, 1160}
	vs = []result.Verdict{P, P, F, F, F, P, F, P, F, P, P, F}
	iv = KneeInterval(judged(rates, vs), 30)
	if iv == nil || iv.Lo > 1160 || iv.Hi < 1190 || iv.Lo < 470 || iv.Hi > 2030 {
		t.Errorf("KneeInterval(12 probes, noisy edge 1125-1190: %v %v) = %+v; want an interval holding 1160-1190 within [470, 2030]", rates, vs, iv)
	}
}

func TestRatioRange(t *testing.T) {
	for _, tc := range []struct {
		a, b   *result.Interval
		lo, hi float64
		ok     bool
	}{
		{&result.Interval{Lo: 9000, Hi: 11000}, &result.Interval{Lo: 2000, Hi: 2500}, 3.6, 5.5, true},
		{nil, &result.Interval{Lo: 2000, Hi: 2500}, 0, 0, false},
		{&result.Interval{Lo: 9000, Hi: 11000}, nil, 0, 0, false},
		{&result.Interval{Lo: 9000, Hi: 11000}, &result.Interval{Lo: 0, Hi: 2500}, 0, 0, false},
	} {
		lo, hi, ok := RatioRange(tc.a, tc.b)
		if ok != tc.ok || math.Abs(lo-tc.lo) > 1e-9 || math.Abs(hi-tc.hi) > 1e-9 {
			t.Errorf("RatioRange(%+v, %+v) = %g, %g, %v; want %g, %g, %v", tc.a, tc.b, lo, hi, ok, tc.lo, tc.hi, tc.ok)
		}
	}
}
