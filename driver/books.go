package driver

import (
	"sync"
	"sync/atomic"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/pgceiling/pgceiling/result"
)

// Histogram range: 1 µs to 60 s at 3 significant digits, values in microseconds.
const (
	histMin     = 1
	histMax     = 60_000_000
	histSigFigs = 3
)

func newHist() *hdrhistogram.Histogram { return hdrhistogram.New(histMin, histMax, histSigFigs) }

// record adds d to h, clamped to the histogram's range so no sample is ever dropped.
func record(h *hdrhistogram.Histogram, d time.Duration) {
	us := d.Microseconds()
	_ = h.RecordValue(min(max(us, histMin), histMax))
}

// countAbove is how many of h's values exceed d, to the histogram's precision: a bucket
// counts when its lowest value is above d.
func countAbove(h *hdrhistogram.Histogram, d time.Duration) int64 {
	var n int64
	for _, b := range h.Distribution() {
		if b.From > d.Microseconds() {
			n += b.Count
		}
	}
	return n
}

// summary turns a histogram into the result's percentiles in milliseconds.
func summary(h *hdrhistogram.Histogram) result.Latency {
	if h == nil || h.TotalCount() == 0 {
		return result.Latency{}
	}
	q := func(p float64) float64 { return float64(h.ValueAtQuantile(p)) / 1000 }
	return result.Latency{Count: h.TotalCount(), P50: q(50), P90: q(90), P99: q(99),
		P999: q(99.9), Max: float64(h.Max()) / 1000, Mean: h.Mean() / 1000}
}

// tally is the outcome counters of one phase (warm-up or measured window).
type tally struct {
	scheduled atomic.Int64
	committed atomic.Int64
	failed    [result.NumClasses]atomic.Int64 // pool_timeout is the rejected count
}

func (t *tally) failedCounts() result.Counts {
	var c result.Counts
	for i := range c {
		if result.Class(i) != result.PoolTimeout {
			c[i] = t.failed[i].Load()
		}
	}
	return c
}

// bad is failed + rejected.
func (t *tally) bad() int64 {
	var n int64
	for i := range t.failed {
		n += t.failed[i].Load()
	}
	return n
}

// second collects one second of the series, by intended arrival time. Its histograms
// live only until every arrival of the second has an outcome; then the second is
// summarised and they are dropped, so memory stays bounded by the timeouts, not the
// probe's length.
type second struct {
	mu           sync.Mutex
	offered      int64
	resolved     int64
	committed    int64
	failed       result.Counts
	lat, qw, lag *hdrhistogram.Histogram // lag: the scheduler's lag of each arrival
	depth        int
	lagMax       time.Duration
	done         bool
	out          result.Second
}

// arrive records one arrival of the second: the queue depth it found and how late the
// scheduler issued it.
func (s *second) arrive(depth int, lag time.Duration) {
	s.mu.Lock()
	s.offered++
	s.depth = max(s.depth, depth)
	s.lagMax = max(s.lagMax, lag)
	if s.lag == nil && !s.done {
		s.lag = newHist()
	}
	if s.lag != nil {
		record(s.lag, lag)
	}
	s.mu.Unlock()
}

// settle records one arrival's outcome: committed when ok, else failed in class c; wait
// is its queue wait (negative when it never started), latency only for a commit.
func (s *second) settle(ok bool, c result.Class, wait, latency time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.resolved++
	if s.done {
		return // summarised early at the end of a probe; the counts below are final
	}
	if ok {
		s.committed++
		if s.lat == nil {
			s.lat = newHist()
		}
		record(s.lat, latency)
	} else {
		s.failed[c]++
	}
	if wait >= 0 {
		if s.qw == nil {
			s.qw = newHist()
		}
		record(s.qw, wait)
	}
}

// finish summarises the second if force or every arrival of it has an outcome.
func (s *second) finish(t int, phase string, force bool) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.done {
		return true
	}
	if !force && s.resolved < s.offered {
		return false
	}
	lat, qw, lag := summary(s.lat), summary(s.qw), summary(s.lag)
	lagMax := float64(s.lagMax.Microseconds()) / 1000
	s.out = result.Second{T: t, Phase: phase, Offered: s.offered, Committed: s.committed,
		Failed: s.failed, P50Ms: lat.P50, P99Ms: lat.P99, QueueWaitP99Ms: qw.P99,
		QueueDepth: s.depth, SchedLagMs: lagMax,
		SchedLagP99Ms: min(lag.P99, lagMax)} // the histogram's bucket edge may pass the exact maximum
	s.lat, s.qw, s.lag, s.done = nil, nil, nil, true
	return true
}
