package workload

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
)

// Keys chooses keys 1..N. Key 1 is the hottest under Zipf.
type Keys struct {
	n        int
	exponent float64
	cdf      []float64 // cdf[i] = P(key <= i+1); nil for uniform
}

// NewKeys returns a chooser over keys 1..n: exact Zipf with the given exponent (key k
// drawn with probability proportional to 1/k^exponent), or uniform when exponent is 0.
// Go's rand.Zipf needs an exponent above 1; this inverse-CDF table takes any exponent >= 0.
func NewKeys(n int, exponent float64) (*Keys, error) {
	if n < 1 {
		return nil, fmt.Errorf("keys: need at least 1 key, got %d", n)
	}
	if exponent < 0 || math.IsNaN(exponent) || math.IsInf(exponent, 0) {
		return nil, fmt.Errorf("keys: zipf exponent must be >= 0, got %v", exponent)
	}
	k := &Keys{n: n, exponent: exponent}
	if exponent == 0 {
		return k, nil
	}
	k.cdf = make([]float64, n)
	var sum float64
	for i := 1; i <= n; i++ {
		sum += math.Pow(float64(i), -exponent)
		k.cdf[i-1] = sum
	}
	for i := range k.cdf {
		k.cdf[i] /= sum
	}
	k.cdf[n-1] = 1
	return k, nil
}

// N is the number of keys.
func (k *Keys) N() int { return k.n }

// Exponent is the Zipf exponent, 0 for uniform.
func (k *Keys) Exponent() float64 { return k.exponent }

// Pick draws one key in 1..N.
func (k *Keys) Pick(rng *rand.Rand) int64 {
	if k.cdf == nil {
		return int64(rng.IntN(k.n)) + 1
	}
	u := rng.Float64()
	return int64(sort.SearchFloat64s(k.cdf, u)) + 1
}

// Share is the exact probability of the top m keys (1..m).
func (k *Keys) Share(m int) float64 {
	if m <= 0 {
		return 0
	}
	if m >= k.n {
		return 1
	}
	if k.cdf == nil {
		return float64(m) / float64(k.n)
	}
	return k.cdf[m-1]
}
