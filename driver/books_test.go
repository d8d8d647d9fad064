package driver

import (
	"testing"
	"time"
)

func TestCountAbove(t *testing.T) {
	h := newHist()
	for range 10 {
		record(h, 500*time.Millisecond)
	}
	record(h, 999*time.Millisecond)
	for range 5 {
		record(h, 2*time.Second)
	}
	record(h, 1002*time.Millisecond) // above 1 s by more than the histogram's 0.1 %
	if n := countAbove(h, time.Second); n != 6 {
		t.Errorf("countAbove(1s) = %d, want 6", n)
	}
	if n := countAbove(newHist(), time.Second); n != 0 {
		t.Errorf("empty histogram: %d above", n)
	}
}

// A second keeps its scheduler lag's maximum and p99, and drops the histogram when summarised.
func TestSecondLagP99(t *testing.T) {
	var s second
	for i := range 200 {
		lag := time.Millisecond
		if i == 7 {
			lag = 400 * time.Millisecond // one preempted wake-up
		}
		s.arrive(0, lag)
		s.settle(true, 0, 0, lag)
	}
	if !s.finish(3, "measure", false) {
		t.Fatal("finish: every arrival settled, want the second summarised")
	}
	if s.out.SchedLagMs != 400 || s.out.SchedLagP99Ms < 0.99 || s.out.SchedLagP99Ms > 1.01 {
		t.Errorf("lag max %v ms, p99 %v ms: want 400 and 1", s.out.SchedLagMs, s.out.SchedLagP99Ms)
	}
	if s.lag != nil || s.lat != nil || s.qw != nil {
		t.Error("histograms kept after the second was summarised")
	}
}

// Booking an arrival and its commit allocates nothing once its second's histograms exist:
// the loop engine books every transaction on its one goroutine.
func TestBookingAllocatesNothing(t *testing.T) {
	cfg := Config{Rate: 1000, Warmup: time.Second, Duration: 2 * time.Second, Conns: 1}.withDefaults()
	b := newBooks(cfg, newStopper())
	b.start = time.Now().Add(-1600 * time.Millisecond)
	sh := newSheet()
	var j job
	book := func() {
		a := arrival{at: 1500 * time.Millisecond}
		b.arrive(0, a.at, 50*time.Microsecond)
		b.offered(a, 50*time.Microsecond, 3, true)
		wait, ok := b.admit(a, b.start.Add(a.at+time.Millisecond))
		if !ok {
			t.Fatal("admit rejected an arrival 1 ms after its intended time")
		}
		j.a, j.begin, j.wait, j.tries = a, b.start.Add(a.at+time.Millisecond), wait, 1
		if b.retry(&j, &sh, nil, true) {
			t.Fatal("retry of a commit")
		}
		b.finish(&j, &sh, nil, false, j.begin.Add(2*time.Millisecond))
	}
	book() // the second's histograms, once
	if n := testing.AllocsPerRun(200, book); n != 0 {
		t.Errorf("booking an arrival and its commit: %v allocations, want 0", n)
	}
	if b.inWindow.Load() != 202 || // AllocsPerRun runs book once more to warm up
		b.drainCommitted.Load() != 0 || b.meas.scheduled.Load() != 202 {
		t.Errorf("in the window %d, in the drain %d, scheduled %d: want every commit in the window",
			b.inWindow.Load(), b.drainCommitted.Load(), b.meas.scheduled.Load())
	}
}
