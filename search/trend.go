package search

import (
	"math"
	"sort"

	"gonum.org/v1/gonum/stat/distuv"
)

// trend is a Theil-Sen fit of one per-second series: the median of the slopes between
// every pair of seconds, Sen's confidence interval for it (from Kendall's S with the
// normal approximation, ties not corrected for, which only widens the interval), and the
// line's value at the last second.
type trend struct {
	n             int     // seconds fitted
	slope, lo, hi float64 // ms per second
	level         float64 // the Theil-Sen line at the last second, ms
}

// senRanks returns the 1-based ranks, among the n(n-1)/2 ascending pairwise slopes, of
// Sen's lower and upper confidence limits at two-sided level conf: (N - C)/2 and
// (N + C)/2 + 1 with C = z × sqrt(n(n-1)(2n+5)/18). A lower rank below 1 means the
// interval is unbounded below (too few seconds for any confidence).
func senRanks(n int, conf float64) (lo, hi int) {
	pairs := float64(n * (n - 1) / 2)
	z := distuv.UnitNormal.Quantile(1 - (1-conf)/2)
	c := z * math.Sqrt(float64(n*(n-1)*(2*n+5))/18)
	lo = int(math.Floor((pairs - c) / 2))
	hi = int(math.Ceil((pairs+c)/2)) + 1
	return lo, min(hi, int(pairs))
}

// notRising counts, among the pairs of y, those whose later value is not above the
// earlier one: the slopes <= 0. Sen's lower limit is > 0 exactly when this count is
// below the lower rank, so the test needs no slopes (and no sorting).
func notRising(y []float64) int {
	c := 0
	for j := 1; j < len(y); j++ {
		for i := 0; i < j; i++ {
			if y[j] <= y[i] {
				c++
			}
		}
	}
	return c
}

// fitTrend fits y (one value per second, x = 0, 1, ...) at two-sided confidence conf.
func fitTrend(y []float64, conf float64) trend {
	n := len(y)
	t := trend{n: n}
	if n < 2 {
		if n == 1 {
			t.level = y[0]
		}
		return t
	}
	slopes := make([]float64, 0, n*(n-1)/2)
	for j := 1; j < n; j++ {
		for i := 0; i < j; i++ {
			slopes = append(slopes, (y[j]-y[i])/float64(j-i))
		}
	}
	// Three order statistics by selection, not a sort: the rule runs once a second.
	N := len(slopes)
	m := N / 2
	nth(slopes, m)
	t.slope = slopes[m]
	if N%2 == 0 {
		below := math.Inf(-1)
		for _, v := range slopes[:m] {
			below = max(below, v)
		}
		t.slope = (below + slopes[m]) / 2
	}
	lo, hi := senRanks(n, conf)
	t.lo, t.hi = math.Inf(-1), math.Inf(1)
	if lo >= 1 {
		if lo-1 < m {
			nth(slopes[:m], lo-1)
		}
		t.lo = slopes[lo-1]
		if hi-1 > m {
			nth(slopes[m+1:], hi-1-(m+1))
		}
		t.hi = slopes[hi-1]
	}
	res := make([]float64, n)
	for i, v := range y {
		res[i] = v - t.slope*float64(i)
	}
	t.level = median(res) + t.slope*float64(n-1)
	return t
}

// significant reports whether Sen's lower limit of y's slope is > 0, without fitting.
func significant(y []float64, conf float64) bool {
	if len(y) < 3 {
		return false
	}
	lo, _ := senRanks(len(y), conf)
	return lo >= 1 && notRising(y) < lo
}

// nth reorders v so that v[k] is the value a sort would put there, everything before it
// is <= v[k] and everything after >= v[k] (quickselect, median-of-three pivots).
func nth(v []float64, k int) {
	lo, hi := 0, len(v)-1
	for lo < hi {
		mid := lo + (hi-lo)/2
		if v[mid] < v[lo] {
			v[mid], v[lo] = v[lo], v[mid]
		}
		if v[hi] < v[lo] {
			v[hi], v[lo] = v[lo], v[hi]
		}
		if v[hi] < v[mid] {
			v[hi], v[mid] = v[mid], v[hi]
		}
		pivot := v[mid]
		i, j := lo, hi
		for i <= j {
			for v[i] < pivot {
				i++
			}
			for v[j] > pivot {
				j--
			}
			if i <= j {
				v[i], v[j] = v[j], v[i]
				i++
				j--
			}
		}
		switch {
		case k <= j:
			hi = j
		case k >= i:
			lo = i
		default:
			return
		}
	}
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}
