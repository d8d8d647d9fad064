package fleet

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/pgceiling/pgceiling/driver"
	"github.com/pgceiling/pgceiling/result"
)

// TestMergedPercentilesEqualOneRecorder: two drivers' histograms, encoded for the upload
// and decoded by the leader, merge into exactly the percentiles of one recorder that saw
// every sample.
func TestMergedPercentilesEqualOneRecorder(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	one := newHist()
	var parts []part
	for id := range 2 {
		h := hists{lat: newHist(), svc: newHist(), wait: newHist()}
		for range 20_000 + id*7_000 {
			v := int64(rng.ExpFloat64()*2_000*float64(id+1)) + 1 // µs, a heavier tail on driver 1
			h.lat.RecordValue(v)
			h.svc.RecordValue(v / 2)
			h.wait.RecordValue(v / 3)
			one.RecordValue(v)
		}
		rep := Report{Driver: id, Probe: &result.Probe{Scheduled: 1, Committed: 1}}
		if err := h.encode(&rep); err != nil {
			t.Fatal(err)
		}
		got, err := rep.decode()
		if err != nil {
			t.Fatalf("decode driver %d: %v", id, err)
		}
		if !got.lat.Equals(h.lat) || !got.svc.Equals(h.svc) || !got.wait.Equals(h.wait) {
			t.Fatalf("driver %d: decode(encode(h)) differs from h: the upload is lossy", id)
		}
		parts = append(parts, part{rep: rep, h: got})
	}
	m := merge(Plan{Drivers: 2, Total: 100}, parts, nil)
	if want := driver.Summary(one); m.Latency != want {
		t.Errorf("merged latency %+v, one recorder %+v", m.Latency, want)
	}
	if m.Latency.Count != 47_000 {
		t.Errorf("merged count %d, want 47000", m.Latency.Count)
	}
}

// TestMergeBooksBalance: the merged books add up and still balance, the series adds
// counts by second, a missing driver makes the probe an error (a fault for the search)
// with the parts that came kept.
func TestMergeBooksBalance(t *testing.T) {
	mk := func(sched, comm, rej int64, lock int64, secs int) *result.Probe {
		p := &result.Probe{Scheduled: sched, Committed: comm, Rejected: rej, CommittedInWindow: comm, MeasuredS: 10,
			AchievedRate: float64(comm) / 10, Conns: 5, TargetRate: 50}
		p.Failed[result.LockTimeout] = lock
		p.Checks.CommittedTotal = comm + 7
		p.Checks.Problems = []string{"ROW MISMATCH: transactions gained 99 rows but the driver saw 3 transactions commit"}
		for i := range secs {
			p.Series = append(p.Series, result.Second{T: i, Offered: 5, Committed: 4, P99Ms: float64(i)})
		}
		return p
	}
	parts := []part{{rep: Report{Driver: 0, Probe: mk(500, 490, 6, 4, 3)}}, {rep: Report{Driver: 1, Probe: mk(510, 505, 2, 3, 4), OffsetMs: -12}}}
	m := merge(Plan{Drivers: 2, Total: 100, SeedBase: 9}, parts, nil)
	if m.Scheduled != 1010 || m.Committed != 995 || m.Rejected != 8 || m.Failed[result.LockTimeout] != 7 {
		t.Errorf("merged books %d = %d + %v + %d", m.Scheduled, m.Committed, m.Failed, m.Rejected)
	}
	if m.Scheduled != m.Committed+m.Failed.Total()+m.Rejected {
		t.Errorf("merged books do not balance: %d != %d + %d + %d", m.Scheduled, m.Committed, m.Failed.Total(), m.Rejected)
	}
	if m.AchievedRate != 99.5 || m.TargetRate != 100 || m.Conns != 10 || m.Checks.CommittedTotal != 1009 {
		t.Errorf("achieved %v target %v conns %d committed total %d", m.AchievedRate, m.TargetRate, m.Conns, m.Checks.CommittedTotal)
	}
	if len(m.Checks.Problems) != 0 {
		t.Errorf("the drivers' own row checks were kept: %q", m.Checks.Problems)
	}
	if len(m.Series) != 4 || m.Series[0].Offered != 10 || m.Series[3].Offered != 5 || m.Series[2].P99Ms != 2 {
		t.Errorf("merged series %+v", m.Series)
	}
	if m.Fleet == nil || len(m.Fleet.Parts) != 2 || m.Fleet.MaxSkewMs != 12 || m.Error != "" {
		t.Errorf("fleet %+v, error %q", m.Fleet, m.Error)
	}
	lost := merge(Plan{Drivers: 3, Total: 150}, parts, []int{2})
	if lost.Error == "" || lost.Committed != 995 || len(lost.Fleet.Missing) != 1 {
		t.Errorf("a missing driver: error %q, committed %d, missing %v", lost.Error, lost.Committed, lost.Fleet.Missing)
	}
}

// TestPlanSplitsTheRate: each driver offers the total / N with its own seed, from the
// plan's instant moved onto its own clock.
func TestPlanSplitsTheRate(t *testing.T) {
	at := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	p := newPlan(3, 4, driver.Config{Rate: 1000, Seed: 7, ErrorBudget: 10, Duration: time.Minute, Streams: 8}, Spec{Workload: "insert"}, at)
	c1, c2 := p.config(1, 20*time.Millisecond), p.config(2, 0)
	if c1.Rate != 250 || c1.Seed == c2.Seed || c1.Seed == p.SeedBase || p.config(0, 0).Seed != 7 {
		t.Errorf("rates %v seeds %d %d %d", c1.Rate, p.config(0, 0).Seed, c1.Seed, c2.Seed)
	}
	if c1.ErrorBudget != 3 || c1.Streams != 2 {
		t.Errorf("driver budget %d streams %d, want 3 and 2", c1.ErrorBudget, c1.Streams)
	}
	if !c1.StartAt.Equal(at.Add(-20 * time.Millisecond)) {
		t.Errorf("StartAt %v on a clock 20 ms behind the server's %v", c1.StartAt, at)
	}
}

// TestClockCheck: a clock off by more than the bound refuses, with the figures.
func TestClockCheck(t *testing.T) {
	for _, c := range []struct {
		off, rtt time.Duration
		ok       bool
	}{{10 * time.Millisecond, time.Millisecond, true}, {-60 * time.Millisecond, time.Millisecond, false},
		{60 * time.Millisecond, 30 * time.Millisecond, true}, {200 * time.Millisecond, 0, false}} {
		err := clock{Offset: c.off, RTT: c.rtt}.check(50 * time.Millisecond)
		if (err == nil) != c.ok {
			t.Errorf("clock{%v, %v}.check(50ms) = %v, want ok %v", c.off, c.rtt, err, c.ok)
		}
	}
}
