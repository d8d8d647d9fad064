package workload

import (
	"math"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/stat/distuv"
)

// harmonic returns sum_{k=1..n} k^-s, summed smallest term first for accuracy, written
// independently of the table NewKeys builds.
func harmonic(n int, s float64) float64 {
	var h float64
	for k := n; k >= 1; k-- {
		h += 1 / math.Pow(float64(k), s)
	}
	return h
}

func TestZipfSharesExact(t *testing.T) {
	for _, tc := range []struct {
		exponent float64
		m        int
	}{
		{1.0, 1}, {1.0, 100}, {1.0, 200}, {0.65, 1}, {0.65, 100}, {0.65, 200}, {2.0, 10}, {1.0, 9999},
	} {
		k, err := NewKeys(10000, tc.exponent)
		if err != nil {
			t.Fatalf("NewKeys(10000, %v): %v", tc.exponent, err)
		}
		want := harmonic(tc.m, tc.exponent) / harmonic(10000, tc.exponent)
		if got := k.Share(tc.m); math.Abs(got-want) > 1e-12 {
			t.Errorf("NewKeys(10000, %v).Share(%d) = %.15f, want %.15f", tc.exponent, tc.m, got, want)
		}
	}
}

// The figures the README quotes.
func TestZipfDocumentedFigures(t *testing.T) {
	one, _ := NewKeys(10000, 1.0)
	if got := one.Share(1); math.Abs(got-0.10217) > 0.00001 {
		t.Errorf("exponent 1.0: hottest share %.5f, want 1/H(10000) = 0.10217", got)
	}
	if got := one.Share(100); math.Abs(got-0.530) > 0.001 {
		t.Errorf("exponent 1.0: top 1%% share %.4f, want about 0.530", got)
	}
	p65, _ := NewKeys(10000, 0.65)
	if top1, top2 := p65.Share(100), p65.Share(200); top1 < 0.15 || top1 > 0.20 || top2 < 0.20 || top2 > 0.25 {
		t.Errorf("exponent 0.65: top 1%% %.3f, top 2%% %.3f; want both near 20%% (0.15-0.20, 0.20-0.25)", top1, top2)
	}
	u, _ := NewKeys(10000, 0)
	if got := u.Share(100); got != 0.01 {
		t.Errorf("uniform: top 1%% share %v, want 0.01", got)
	}
}

func TestNewKeysRejects(t *testing.T) {
	for _, tc := range []struct {
		n int
		e float64
	}{{0, 1}, {-1, 1}, {10, -0.5}, {10, math.NaN()}, {10, math.Inf(1)}} {
		if _, err := NewKeys(tc.n, tc.e); err == nil {
			t.Errorf("NewKeys(%d, %v) = nil error, want an error", tc.n, tc.e)
		}
	}
}

// TestPickDistribution draws a million seeded picks and compares the counts in
// logarithmic bins with the exact shares by a chi-square test at p = 0.001.
func TestPickDistribution(t *testing.T) {
	const n, draws = 10000, 1000000
	for _, tc := range []struct {
		exponent float64
		edges    []int // bin i holds keys edges[i-1]+1 .. edges[i]
	}{
		{1.0, []int{0, 1, 10, 100, 1000, 10000}},
		{0.65, []int{0, 1, 10, 100, 1000, 10000}},
		{0, []int{0, 1000, 2000, 3000, 4000, 5000, 6000, 7000, 8000, 9000, 10000}},
	} {
		k, err := NewKeys(n, tc.exponent)
		if err != nil {
			t.Fatal(err)
		}
		rng := rand.New(rand.NewPCG(7, 11))
		counts := make([]float64, len(tc.edges)-1)
		for range draws {
			key := int(k.Pick(rng))
			if key < 1 || key > n {
				t.Fatalf("exponent %v: Pick = %d, outside 1..%d", tc.exponent, key, n)
			}
			for b := 1; b < len(tc.edges); b++ {
				if key <= tc.edges[b] {
					counts[b-1]++
					break
				}
			}
		}
		var chi2 float64
		for b := range counts {
			p := k.Share(tc.edges[b+1]) - k.Share(tc.edges[b])
			exp := p * draws
			chi2 += (counts[b] - exp) * (counts[b] - exp) / exp
		}
		limit := distuv.ChiSquared{K: float64(len(counts) - 1)}.Quantile(0.999)
		if chi2 > limit {
			t.Errorf("exponent %v: chi-square %.1f over %d bins exceeds %.1f (p=0.001); counts %v", tc.exponent, chi2, len(counts), limit, counts)
		}
		if tc.exponent == 1.0 {
			if got := counts[0] / draws; math.Abs(got-0.10217) > 0.002 {
				t.Errorf("exponent 1.0: key 1 drawn %.4f of the time, want 0.10217 +- 0.002", got)
			}
		}
	}
}
