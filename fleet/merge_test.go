package fleet

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/pgceiling/pgceiling/driver"
	"github.com/pgceiling/pgceiling/result"
)

// TestMergedPercentilesEqualOneRecorder: N = 2, 3 and 4 drivers' histograms, each of its
// own sample set and shape, encoded for the upload and decoded by the leader, merge into
// exactly the summaries (every percentile, the mean, the max, the count) of one recorder
// per histogram that saw every sample.
func TestMergedPercentilesEqualOneRecorder(t *testing.T) {
	// Each driver draws from its own distribution (µs): exponential, uniform, a heavy
	// log-normal tail, two modes; a merge that weighs drivers equally, or averages their
	// percentiles, cannot give one recorder's figures from these.
	shapes := []func(r *rand.Rand) float64{
		func(r *rand.Rand) float64 { return r.ExpFloat64() * 2_000 },
		func(r *rand.Rand) float64 { return 500 + r.Float64()*9_500 },
		func(r *rand.Rand) float64 { return math.Exp(7 + 1.5*r.NormFloat64()) },
		func(r *rand.Rand) float64 {
			if r.IntN(10) == 0 {
				return 200_000 + r.Float64()*800_000
			}
			return 300 + r.Float64()*700
		},
	}
	for n := 2; n <= 4; n++ {
		rng := rand.New(rand.NewPCG(uint64(n), 2))
		one := hists{lat: newHist(), svc: newHist(), wait: newHist()}
		var parts []part
		var count int64
		for id := range n {
			h := hists{lat: newHist(), svc: newHist(), wait: newHist()}
			samples := 5_000 + id*7_000
			for range samples {
				v := int64(shapes[id](rng)) + 1
				w := int64(rng.ExpFloat64()*float64(v)/4) + 1
				for _, x := range []struct {
					own, all *hdrhistogram.Histogram
					v        int64
				}{{h.lat, one.lat, v}, {h.svc, one.svc, v - w/2}, {h.wait, one.wait, w}} {
					if err := x.own.RecordValue(max(x.v, 1)); err != nil {
						t.Fatal(err)
					}
					_ = x.all.RecordValue(max(x.v, 1))
				}
			}
			count += int64(samples)
			rep := Report{Driver: id, Probe: &result.Probe{Scheduled: int64(samples), Committed: int64(samples)}}
			if err := h.encode(&rep); err != nil {
				t.Fatal(err)
			}
			got, err := rep.decode()
			if err != nil {
				t.Fatalf("N=%d: decode driver %d: %v", n, id, err)
			}
			if !got.lat.Equals(h.lat) || !got.svc.Equals(h.svc) || !got.wait.Equals(h.wait) {
				t.Fatalf("N=%d, driver %d: decode(encode(h)) differs from h: the upload is lossy", n, id)
			}
			parts = append(parts, part{rep: rep, h: got})
		}
		m := merge(Plan{Drivers: n, Total: 100}, parts, nil)
		for _, c := range []struct {
			name      string
			got, want result.Latency
		}{{"latency", m.Latency, driver.Summary(one.lat)}, {"service", m.Service, driver.Summary(one.svc)},
			{"queue wait", m.QueueWait, driver.Summary(one.wait)}} {
			if c.got != c.want {
				t.Errorf("N=%d: merged %s %+v, one recorder %+v", n, c.name, c.got, c.want)
			}
		}
		if m.Latency.Count != count || m.Committed != count {
			t.Errorf("N=%d: merged count %d, committed %d, want %d", n, m.Latency.Count, m.Committed, count)
		}
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
	if lost.Loops != 0 || lost.LoopBusy != nil {
		t.Errorf("drivers without loops: merged loops %d %v", lost.Loops, lost.LoopBusy)
	}
	if lost.Error == "" || lost.Committed != 995 || len(lost.Fleet.Missing) != 1 {
		t.Errorf("a missing driver: error %q, committed %d, missing %v", lost.Error, lost.Committed, lost.Fleet.Missing)
	}
}

// TestMergeLoopsAndClientCPU: the merged probe lists every driver's loops (not the
// leader's alone), in driver order, and its client CPU per transaction is the fleet's
// CPU over the fleet's commits.
func TestMergeLoopsAndClientCPU(t *testing.T) {
	a := &result.Probe{Loops: 2, LoopBusy: []float64{0.8, 0.6}, LoopsAddedS: []float64{0, 3}, ClientCPUSeconds: 3,
		ClientCPUPerTxMs: 0.3}
	a.Checks.CommittedTotal = 10_000
	b := &result.Probe{Loops: 1, LoopBusy: []float64{0.5}, LoopsAddedS: []float64{0}, ClientCPUSeconds: 1, ClientCPUPerTxMs: 0.1}
	b.Checks.CommittedTotal = 10_000
	m := merge(Plan{Drivers: 2, Total: 100}, []part{{rep: Report{Driver: 0, Probe: a}}, {rep: Report{Driver: 1, Probe: b}}}, nil)
	if m.Loops != 3 || !slices.Equal(m.LoopBusy, []float64{0.8, 0.6, 0.5}) || !slices.Equal(m.LoopsAddedS, []float64{0, 3, 0}) {
		t.Errorf("merged loops %d, busy %v, added at %v; want 3, [0.8 0.6 0.5], [0 3 0]", m.Loops, m.LoopBusy, m.LoopsAddedS)
	}
	if m.ClientCPUPerTxMs != 0.2 {
		t.Errorf("merged client CPU per tx %v ms, want 4 s over 20,000 commits = 0.2", m.ClientCPUPerTxMs)
	}
	if a.Loops != 2 || len(a.LoopBusy) != 2 {
		t.Errorf("merge changed the leader's own part: %d loops %v", a.Loops, a.LoopBusy)
	}
}

// TestMergeBooksBalanceN: for 3 and 4 drivers with random books (every failure class,
// rejections, retries), the merged books are the parts' sums and balance; with drivers
// missing, the parts that came are still summed and balance, and the probe is an error
// naming the missing ones.
func TestMergeBooksBalanceN(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, c := range []struct {
		drivers int
		missing []int
	}{{3, nil}, {4, nil}, {4, []int{3}}, {4, []int{1, 3}}} {
		var parts []part
		var sched, comm, rej, fail int64
		for id := range c.drivers {
			if slices.Contains(c.missing, id) {
				continue
			}
			p := &result.Probe{Committed: rng.Int64N(10_000), Rejected: rng.Int64N(50), Retries: rng.Int64N(5), MeasuredS: 2}
			for cl := range p.Failed {
				p.Failed[cl] = rng.Int64N(20)
			}
			p.Scheduled = p.Committed + p.Failed.Total() + p.Rejected
			sched, comm, rej, fail = sched+p.Scheduled, comm+p.Committed, rej+p.Rejected, fail+p.Failed.Total()
			parts = append(parts, part{rep: Report{Driver: id, Probe: p}})
		}
		m := merge(Plan{Drivers: c.drivers, Total: 100}, parts, c.missing)
		what := fmt.Sprintf("%d drivers, missing %v", c.drivers, c.missing)
		if m.Scheduled != sched || m.Committed != comm || m.Rejected != rej || m.Failed.Total() != fail || !m.Balanced() {
			t.Errorf("%s: merged %d = %d + %d + %d, parts %d = %d + %d + %d", what, m.Scheduled, m.Committed, m.Failed.Total(),
				m.Rejected, sched, comm, fail, rej)
		}
		if len(m.Fleet.Parts) != c.drivers-len(c.missing) || (m.Error != "") != (len(c.missing) > 0) {
			t.Errorf("%s: %d parts, error %q", what, len(m.Fleet.Parts), m.Error)
		}
		if want := "driver " + joinInts(c.missing) + " sent no results"; len(c.missing) > 0 && !strings.Contains(m.Error, want) {
			t.Errorf("%s: error %q, want %q", what, m.Error, want)
		}
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
