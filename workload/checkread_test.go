package workload

import (
	"math"
	"sync"
	"testing"
	"time"
)

func TestRowsBuckets(t *testing.T) {
	prev := -1
	for _, v := range []int64{0, 1, 20, 63, 64, 65, 100, 127, 128, 1000, 3600, 1 << 20, 1<<40 - 1} {
		b := rowsBucket(v)
		if b < prev {
			t.Errorf("rowsBucket(%d) = %d, below the previous value's %d", v, b, prev)
		}
		prev = b
		got := rowsValue(b)
		if v < exactBelow && got != float64(v) {
			t.Errorf("rowsValue(rowsBucket(%d)) = %v, want exact", v, got)
		}
		if rel := math.Abs(got-float64(v)) / math.Max(float64(v), 1); rel > 1.0/subBuckets {
			t.Errorf("rowsValue(rowsBucket(%d)) = %v, %.3f off (want <= %.3f)", v, got, rel, 1.0/subBuckets)
		}
	}
	if b := rowsBucket(1 << 50); b != rowsBucket(maxRows) {
		t.Errorf("rowsBucket(2^50) = %d, want the last bucket %d", b, rowsBucket(maxRows))
	}
}

// CheckRead's summary: exact percentiles below the limit, the medians of the first and
// the last third of the elapsed time, and bounded memory however long it runs.
func TestCheckReads(t *testing.T) {
	c := newCheckReads(time.Hour, 20)
	if r := c.read(); r.Checks != 0 || r.Limit != 20 || r.WindowS != 3600 {
		t.Errorf("empty read = %+v", r)
	}
	// A growing read: 0 rows in the first third, 10 in the second, 20 in the last,
	// simulated by moving the start back (one slot a second).
	c.start = c.start.Add(-30 * time.Second)
	for s := 0; s < 30; s++ {
		v := int64(s / 10 * 10)
		for i := 0; i < 100; i++ {
			c.mu.Lock()
			c.hist[s*c.buckets+rowsBucket(v)]++
			c.used = max(c.used, s+1)
			c.n++
			c.sum += float64(v)
			c.max = max(c.max, v)
			c.mu.Unlock()
		}
	}
	r := c.read()
	if r.Checks != 3000 || r.FirstP50 != 0 || r.LastP50 != 20 || r.P50 != 10 || r.P99 != 20 || r.Mean != 10 || r.Max != 20 {
		t.Errorf("growing read = %+v, want first-third median 0, last 20, p50 10, mean 10", r)
	}

	// Concurrent records, then a reset.
	c.reset()
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 1000; i++ {
				c.record(int64(i % 21))
			}
		}()
	}
	wg.Wait()
	if r := c.read(); r.Checks != 8000 || r.Max != 20 || r.P50 != 10 || math.Abs(r.Mean-8000*10/8000.0) > 0.5 {
		t.Errorf("after 8 x 1000 concurrent records = %+v", r)
	}

	// Hours of records fit the same slots: neighbours merge, nothing is lost.
	c.reset()
	c.start = c.start.Add(-10 * time.Hour)
	c.record(5)
	if c.width < 10*time.Hour/checkSlots || len(c.hist) != checkSlots*c.buckets {
		t.Errorf("after 10 h: slot width %v, %d counters; want >= %v and %d", c.width, len(c.hist), 10*time.Hour/checkSlots, checkSlots*c.buckets)
	}
	if r := c.read(); r.Checks != 1 || r.LastP50 != 5 {
		t.Errorf("a record 10 h after the reset: %+v, want it in the last third", r)
	}

	// Unbounded: large counts within the buckets' 3 %.
	u := newCheckReads(24*time.Hour, 0)
	for i := 0; i < 100; i++ {
		u.record(3600)
	}
	if r := u.read(); r.Limit != 0 || math.Abs(r.P50-3600) > 3600/subBuckets || r.Max != 3600 || r.Mean != 3600 {
		t.Errorf("unbounded read of 3600 rows = %+v", r)
	}
}

func TestCheckRecordAllocatesNothing(t *testing.T) {
	c := newCheckReads(time.Hour, 20)
	if n := testing.AllocsPerRun(1000, func() { c.record(7) }); n != 0 {
		t.Errorf("record allocates %v times, want 0", n)
	}
}
