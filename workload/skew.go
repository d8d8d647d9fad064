package workload

import (
	"cmp"
	"math/rand/v2"
	"slices"
	"sync/atomic"

	"github.com/pgceiling/pgceiling/result"
)

// countedKeys is a key chooser that counts every pick per key with atomic counters, so
// the skew actually produced can be reported while workers keep picking.
type countedKeys struct {
	keys   *Keys
	counts []atomic.Int64 // counts[k-1] = picks of key k
}

func newCountedKeys(n int, exponent float64) (*countedKeys, error) {
	k, err := NewKeys(n, exponent)
	if err != nil {
		return nil, err
	}
	return &countedKeys{keys: k, counts: make([]atomic.Int64, n)}, nil
}

// pick draws a key and counts it; it does not allocate.
func (c *countedKeys) pick(rng *rand.Rand) int64 {
	k := c.keys.Pick(rng)
	c.counts[k-1].Add(1)
	return k
}

// skew summarises the counts: the hottest key's share and the share of the top 1 % of
// keys (at least one key), both over the keys actually picked most.
func (c *countedKeys) skew() result.Skew {
	s := result.Skew{Exponent: c.keys.Exponent(), Keys: c.keys.N()}
	counts := make([]int64, len(c.counts))
	for i := range c.counts {
		counts[i] = c.counts[i].Load()
		s.Picks += counts[i]
	}
	if s.Picks == 0 {
		return s
	}
	slices.SortFunc(counts, func(a, b int64) int { return cmp.Compare(b, a) })
	top := (len(counts) + 99) / 100
	var sum int64
	for _, n := range counts[:top] {
		sum += n
	}
	s.HottestShare = float64(counts[0]) / float64(s.Picks)
	s.Top1PctShare = float64(sum) / float64(s.Picks)
	return s
}

func (c *countedKeys) reset() {
	for i := range c.counts {
		c.counts[i].Store(0)
	}
}
