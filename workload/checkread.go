package workload

import (
	"math/bits"
	"sync"
	"time"

	"github.com/pgceiling/pgceiling/result"
)

// Histogram buckets of rows per check: exact below exactBelow, then subBuckets
// log-linear buckets per power of two (at most 1/32 = 3 % wide), up to maxRows.
const (
	exactBelow = 64
	subBuckets = 32
	maxRows    = 1<<40 - 1
	// checkSlots is the number of time slots since the last reset. Slots start one
	// second wide; when they are all used, neighbours merge and the width doubles, so
	// memory stays fixed for any probe length and each third of the elapsed time always
	// spans at least checkSlots/6 slots.
	checkSlots = 48
)

// rowsBucket is v's bucket.
func rowsBucket(v int64) int {
	if v < 0 {
		v = 0
	}
	if v < exactBelow {
		return int(v)
	}
	if v > maxRows {
		v = maxRows
	}
	shift := bits.Len64(uint64(v)) - 6 // >= 1; top 6 bits kept
	top := int(v >> shift)             // 32..63
	return exactBelow + (shift-1)*subBuckets + top - subBuckets
}

// rowsValue is the value a bucket stands for: exact below exactBelow, else the middle
// of its range.
func rowsValue(b int) float64 {
	if b < exactBelow {
		return float64(b)
	}
	j := b - exactBelow
	shift := j/subBuckets + 1
	low := int64(j%subBuckets+subBuckets) << shift
	return float64(low) + float64(int64(1)<<shift-1)/2
}

// checkReads records the rows each fraud check counted, with the time it was counted,
// in a fixed-size structure: a histogram per time slot since the last reset. Safe for
// concurrent use; recording does not allocate.
type checkReads struct {
	window  time.Duration
	limit   int64
	buckets int // per slot: enough for values up to limit (or maxRows when unbounded)

	mu    sync.Mutex
	start time.Time
	width time.Duration // of one slot
	used  int           // slots holding records
	hist  []uint32      // checkSlots x buckets
	n     int64
	sum   float64
	max   int64
}

func newCheckReads(window time.Duration, limit int64) *checkReads {
	top := int64(maxRows)
	if limit > 0 {
		top = limit
	}
	c := &checkReads{window: window, limit: limit, buckets: rowsBucket(top) + 1}
	c.hist = make([]uint32, checkSlots*c.buckets)
	c.reset()
	return c
}

// record counts one check that read v rows.
func (c *checkReads) record(v int64) {
	b := rowsBucket(v)
	now := time.Now()
	c.mu.Lock()
	s := int(now.Sub(c.start) / c.width)
	for s >= checkSlots {
		c.coarsen()
		s = int(now.Sub(c.start) / c.width)
	}
	s = max(s, 0)
	c.hist[s*c.buckets+b]++
	c.used = max(c.used, s+1)
	c.n++
	c.sum += float64(v)
	c.max = max(c.max, v)
	c.mu.Unlock()
}

// coarsen merges neighbouring slots and doubles their width. c.mu is held.
func (c *checkReads) coarsen() {
	nb := c.buckets
	for i := 0; i < checkSlots/2; i++ {
		dst := c.hist[i*nb : (i+1)*nb]
		a, b := c.hist[2*i*nb:(2*i+1)*nb], c.hist[(2*i+1)*nb:(2*i+2)*nb]
		for j := range dst {
			dst[j] = a[j] + b[j]
		}
	}
	clear(c.hist[checkSlots/2*nb:])
	c.width *= 2
	c.used = (c.used + 1) / 2
}

func (c *checkReads) reset() {
	c.mu.Lock()
	clear(c.hist)
	c.start, c.width, c.used = time.Now(), time.Second, 0
	c.n, c.sum, c.max = 0, 0, 0
	c.mu.Unlock()
}

// read summarises the checks since the last reset: percentiles over all of them, and
// the medians of the first and the last third of the time elapsed since the reset (a
// slot belongs to the third that holds its middle).
func (c *checkReads) read() *result.CheckRead {
	c.mu.Lock()
	defer c.mu.Unlock()
	r := &result.CheckRead{Checks: c.n, WindowS: c.window.Seconds(), Limit: c.limit}
	if c.n == 0 {
		return r
	}
	elapsed := time.Since(c.start)
	nb := c.buckets
	all := make([]uint64, nb)
	first := make([]uint64, nb)
	last := make([]uint64, nb)
	for s := 0; s < c.used; s++ {
		mid := c.width*time.Duration(s) + c.width/2
		for b, v := range c.hist[s*nb : (s+1)*nb] {
			all[b] += uint64(v)
			if mid < elapsed/3 {
				first[b] += uint64(v)
			} else if mid >= elapsed*2/3 {
				last[b] += uint64(v)
			}
		}
	}
	clamp := func(v float64) float64 { return min(v, float64(c.max)) }
	r.P50 = clamp(quantile(all, 0.50))
	r.P99 = clamp(quantile(all, 0.99))
	r.FirstP50 = clamp(quantile(first, 0.50))
	r.LastP50 = clamp(quantile(last, 0.50))
	r.Mean = c.sum / float64(c.n)
	r.Max = float64(c.max)
	return r
}

// quantile is the value of the smallest bucket holding the q-th of the counts (0 when
// there are none).
func quantile(h []uint64, q float64) float64 {
	var n uint64
	for _, v := range h {
		n += v
	}
	if n == 0 {
		return 0
	}
	rank := uint64(q*float64(n) + 0.9999999)
	rank = min(max(rank, 1), n)
	var cum uint64
	for b, v := range h {
		cum += v
		if cum >= rank {
			return rowsValue(b)
		}
	}
	return rowsValue(len(h) - 1)
}
