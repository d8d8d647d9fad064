package driver

import (
	"context"
	"errors"
	"fmt"
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
	ok, _, _ := s.summarise(t, phase, force)
	return ok
}

// summarise is finish that also hands over the second's latency and queue-wait
// histograms, which the second drops (nil when it had none or was summarised before).
func (s *second) summarise(t int, phase string, force bool) (ok bool, lat, qw *hdrhistogram.Histogram) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.done {
		return true, nil, nil
	}
	if !force && s.resolved < s.offered {
		return false, nil, nil
	}
	lat, qw = s.lat, s.qw
	ls, qs, lag := summary(s.lat), summary(s.qw), summary(s.lag)
	lagMax := float64(s.lagMax.Microseconds()) / 1000
	s.out = result.Second{T: t, Phase: phase, Offered: s.offered, Committed: s.committed,
		Failed: s.failed, P50Ms: ls.P50, P99Ms: ls.P99, QueueWaitP99Ms: qs.P99,
		QueueDepth: s.depth, SchedLagMs: lagMax,
		SchedLagP99Ms: min(lag.P99, lagMax)} // the histogram's bucket edge may pass the exact maximum
	s.lat, s.qw, s.lag, s.done = nil, nil, nil, true
	return true, lat, qw
}

// stopper is the probe's early stop: the first halt wins and fixes the offset where
// issuing stopped, which is also where the measured window ends.
type stopper struct {
	once   sync.Once
	ch     chan struct{} // closed by the first halt
	at     atomic.Int64  // offset of the first halt; -1 while running
	reason string        // set before ch is closed
	by     string        // a result.CutBy*, or "" for an interruption
}

func newStopper() *stopper {
	s := &stopper{ch: make(chan struct{})}
	s.at.Store(-1)
	return s
}

// halt stops issuing at offset at; by says what stopped the probe.
func (s *stopper) halt(at time.Duration, by, reason string) {
	s.once.Do(func() {
		s.reason, s.by = reason, by
		s.at.Store(int64(at))
		close(s.ch)
	})
}

// offset is where the probe was halted, or -1 while it runs.
func (s *stopper) offset() time.Duration { return time.Duration(s.at.Load()) }

// sheet is one connection's part of the books: the histograms of its measured arrivals
// and its retries. Only the goroutine that drives the connection writes it; the sheets
// are merged when the probe has ended.
type sheet struct {
	lat, svc, wait *hdrhistogram.Histogram
	retries        int64 // retries of measured-window arrivals
}

func newSheet() sheet { return sheet{lat: newHist(), svc: newHist(), wait: newHist()} }

// books is the probe's ledger and the one place of the rules that decide an arrival's
// outcome: when an arrival is rejected (admit, expired, reject), when a failed try is
// retried (retry), and how every outcome is booked (finish, noConn, cancelled). Both
// engines report through it and through nothing else. It is safe for concurrent use:
// the pgx engine books from every connection's goroutine, the loop from its one.
type books struct {
	cfg   Config
	start time.Time // the probe's clock: offsets are from here
	end   time.Duration
	stop  *stopper
	secs  []*second
	lags  []*hdrhistogram.Histogram // per stream, measured window; written by its scheduler only
	warm  tally
	meas  tally
	cut   atomic.Bool // the drain ran out: in-flight work is being cancelled

	// inWindow counts commits that ended inside the measured window, whatever the
	// arrival's phase; drainCommitted, measured-window arrivals that committed after it.
	inWindow       atomic.Int64
	drainCommitted atomic.Int64
	committed      atomic.Int64 // all commits so far, for the live rate and the server watch
	issued         atomic.Int64 // all arrivals so far
	uncertain      atomic.Int64 // cancelled mid-flight: may have committed
	connFails      atomic.Int64 // connection failures so far, for the server watch
	budgetHit      atomic.Bool
}

func newBooks(cfg Config, stop *stopper) *books {
	b := &books{cfg: cfg, end: cfg.Warmup + cfg.Duration, stop: stop}
	for range cfg.Streams {
		b.lags = append(b.lags, newHist())
	}
	b.secs = make([]*second, int((b.end+time.Second-1)/time.Second))
	for i := range b.secs {
		b.secs[i] = &second{}
	}
	return b
}

func (b *books) tallyOf(at time.Duration) *tally {
	if at < b.cfg.Warmup {
		return &b.warm
	}
	return &b.meas
}

// windowEnd is the measured window's end as far as it is known now: the stop offset once
// the probe was halted, else Warmup + Duration.
func (b *books) windowEnd() time.Duration {
	if sa := b.stop.offset(); sa >= 0 && sa < b.end {
		return sa
	}
	return b.end
}

// arrive books a new arrival of stream i at its intended offset at, issued lag late.
func (b *books) arrive(i int, at, lag time.Duration) {
	b.tallyOf(at).scheduled.Add(1)
	b.issued.Add(1)
	if at >= b.cfg.Warmup {
		record(b.lags[i], lag)
	}
}

// offered books what the engine did with a new arrival: queued behind depth arrivals that
// wait for a connection (itself included), or rejected because the queue was full.
func (b *books) offered(a arrival, lag time.Duration, depth int, queued bool) {
	b.secs[a.at/time.Second].arrive(depth, lag)
	if !queued {
		b.reject(a)
	}
}

// expired reports whether a waiting arrival may no longer start at now: it has waited
// out the pool wait since its intended time, or the drain has run out.
func (b *books) expired(a arrival, now time.Time) bool {
	return b.cut.Load() || now.Sub(b.start.Add(a.at)) > b.cfg.PoolWait
}

// deadline is when a waiting arrival expires, on the probe's clock.
func (b *books) deadline(a arrival) time.Duration { return a.at + b.cfg.PoolWait }

// admit is the pool-wait rule for an arrival a connection takes at now: it returns the
// arrival's queue wait, or books it rejected and returns false.
func (b *books) admit(a arrival, now time.Time) (time.Duration, bool) {
	if b.expired(a, now) {
		b.reject(a)
		return 0, false
	}
	return now.Sub(b.start.Add(a.at)), true
}

// reject books an arrival that never started (class pool_timeout).
func (b *books) reject(a arrival) { b.settle(a, nil, false, result.PoolTimeout, -1, 0, 0) }

// retry is the retry rule after a failed try: only serialization failures and deadlocks,
// whose transactions the server rolled back whole, on a connection still sound, up to
// MaxTries. A retry of a measured arrival is counted on the connection's sheet.
func (b *books) retry(j *job, sh *sheet, err error, connOK bool) bool {
	if err == nil || !connOK || j.tries >= b.cfg.MaxTries || !retryable(Classify(err)) {
		return false
	}
	j.tries++
	if j.a.at >= b.cfg.Warmup {
		sh.retries++
	}
	return true
}

// finish books a job's outcome at end: committed when err is nil, else failed in err's
// class (closed: the try left the connection closed). It returns the class.
func (b *books) finish(j *job, sh *sheet, err error, closed bool, end time.Time) result.Class {
	if err == nil {
		b.settle(j.a, sh, true, 0, j.wait, end.Sub(j.begin), end.Sub(b.start.Add(j.a.at)))
		return 0
	}
	c := b.classify(err, closed)
	b.settle(j.a, sh, false, c, j.wait, 0, 0)
	return c
}

// noConn books a job whose connection could not be opened again: rejected when the
// drain ran out meanwhile (it never started), else failed in err's class.
func (b *books) noConn(j *job, sh *sheet, err error) {
	if b.cut.Load() {
		b.reject(j.a)
		return
	}
	b.settle(j.a, sh, false, b.classify(err, false), -1, 0, 0)
}

// cancelled books a job cut off in flight at the end of the drain: failed as other and
// uncertain, because its COMMIT may or may not have reached the server.
func (b *books) cancelled(j *job, sh *sheet) {
	b.uncertain.Add(1)
	b.settle(j.a, sh, false, result.Other, j.wait, 0, 0)
}

// classify is Classify plus the driver's knowledge: an error that left the connection
// closed is a connection failure; work cut off at the end of the drain is other, and
// uncertain.
func (b *books) classify(err error, closed bool) result.Class {
	c := Classify(err)
	if b.cut.Load() && (errors.Is(err, context.Canceled) || c == result.Connection || c == result.Other) {
		b.uncertain.Add(1)
		return result.Other
	}
	if c == result.Other && closed {
		return result.Connection
	}
	return c
}

// settle books an arrival's outcome in its phase and second, and on the connection's
// sheet (nil for rejections without a connection). A commit also counts by when it
// ended (a.at + lat): inside the measured window, or after it for a measured arrival.
func (b *books) settle(a arrival, sh *sheet, ok bool, c result.Class, wait, svc, lat time.Duration) {
	t := b.tallyOf(a.at)
	if ok {
		t.committed.Add(1)
		b.committed.Add(1)
		// A commit that ends while a halt is storing its offset may be placed on the wrong
		// side of it: a race of nanoseconds, for one transaction at most per connection.
		switch end := a.at + lat; {
		case end >= b.windowEnd():
			if t == &b.meas {
				b.drainCommitted.Add(1)
			}
		case end >= b.cfg.Warmup:
			b.inWindow.Add(1)
		}
	} else {
		t.failed[c].Add(1)
		if c == result.Connection {
			b.connFails.Add(1)
		}
		if t == &b.meas && b.cfg.ErrorBudget > 0 && t.bad() > b.cfg.ErrorBudget && !b.budgetHit.Swap(true) {
			b.stop.halt(time.Since(b.start), result.CutByErrors, fmt.Sprintf("errors exceeded the probe's budget of %d", b.cfg.ErrorBudget))
		}
	}
	b.secs[a.at/time.Second].settle(ok, c, wait, lat)
	if sh != nil && t == &b.meas {
		if wait >= 0 {
			record(sh.wait, wait)
		}
		if ok {
			record(sh.lat, lat)
			record(sh.svc, svc)
		}
	}
}

// Summary is a latency histogram (µs) as the result's percentiles in milliseconds, as
// every probe reports them: for histograms merged outside the driver (package fleet).
func Summary(h *hdrhistogram.Histogram) result.Latency { return summary(h) }
