package metrics

import (
	"net/http"
	"sort"
	"sync"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/pgceiling/pgceiling/driver"
	"github.com/pgceiling/pgceiling/result"
)

// TopWaits is how many of the last probe's wait events pgceiling_wait_share shows.
const TopWaits = 5

// The phases the counters and histograms are split by: a second of the series belongs
// to the phase it starts in, the measured window's books to the measured window.
var phases = [...]string{result.PhaseWarmup, result.PhaseMeasure}

const (
	warm = iota
	meas
)

// phaseIndex is the counters' phase of a second of the series.
func phaseIndex(phase string) int {
	if phase == result.PhaseWarmup {
		return warm
	}
	return meas
}

// Buckets are the upper bounds, in seconds, of the latency and queue-wait histograms:
// about three a decade from 100 µs to a minute (the driver's histograms end at 60 s).
var Buckets = []float64{0.0001, 0.0002, 0.0005, 0.001, 0.002, 0.003, 0.005, 0.0075, 0.01, 0.015, 0.02, 0.03,
	0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.5, 0.75, 1, 1.5, 2, 3, 5, 10, 30, 60}

// tally is the books of one phase: arrivals offered (scheduled), committed, failed by
// class (pool_timeout is not used: it is rejected) and rejected.
type tally struct {
	offered, committed, rejected int64
	failed                       result.Counts
}

func (t *tally) add(o tally) {
	t.offered += o.offered
	t.committed += o.committed
	t.rejected += o.rejected
	for i := range t.failed {
		t.failed[i] += o.failed[i]
	}
}

// secondTally is the books of one second of the series.
func secondTally(s result.Second) tally {
	t := tally{offered: s.Offered, committed: s.Committed, rejected: s.Failed[result.PoolTimeout], failed: s.Failed}
	t.failed[result.PoolTimeout] = 0
	return t
}

// Probe describes the probe about to run.
type Probe struct {
	Workload   string
	SyncCommit result.SyncCommit
	Rate       float64 // offered arrivals per second
}

// Metrics is the live state of one run or search. Its methods are safe for concurrent
// use: the driver's goroutine feeds it while the HTTP server reads it.
type Metrics struct {
	command string
	reg     *prometheus.Registry

	mu sync.Mutex
	st state // guarded by mu
}

// state is what Metrics knows; Collect works on a copy.
type state struct {
	// done is the books of the probes that ended; cur, the summarised seconds of the one
	// running. At a probe's end its books replace its seconds (ProbeEnd).
	done, cur [len(phases)]tally
	lat, wait [len(phases)]*hdrhistogram.Histogram // cumulative, µs, every probe

	running       bool
	probe         Probe
	sweep, sweeps int
	number        int // the search's probe number within the sweep (run: 1)
	live          driver.Live
	p99Ms         float64 // p99 latency of the latest summarised second
	probes        int64
	bracket       result.Bracket
	verdicts      map[result.Verdict]int64
	cpuSeconds    float64
	cpuShare      float64 // the last observed probe's, of the server's cores
	cpuKnown      bool
	waitSamples   map[string]int64
	waitShares    []result.WaitShare // the last observed probe's top TopWaits
}

// New makes the metrics of one command ("run" or "search"): the search's bracket and
// verdicts are exported by search only. The registry also has the process collector
// (the driver's own CPU and memory).
func New(command string) *Metrics {
	m := &Metrics{command: command, reg: prometheus.NewRegistry(), st: state{verdicts: map[result.Verdict]int64{},
		waitSamples: map[string]int64{}, sweep: 1, sweeps: 1}}
	for i := range phases {
		m.st.lat[i], m.st.wait[i] = newHist(), newHist()
	}
	m.reg.MustRegister(m, collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// newHist is the driver's histogram range: 1 µs to 60 s at 3 significant digits.
func newHist() *hdrhistogram.Histogram { return hdrhistogram.New(1, 60_000_000, 3) }

// Handler serves the metrics, in OpenMetrics when the scraper asks for it (Prometheus
// does), else in Prometheus's text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{EnableOpenMetrics: true})
}

// Sweep says which sweep of how many the next probes belong to (a run: 1 of 1).
func (m *Metrics) Sweep(i, n int) {
	m.mu.Lock()
	m.st.sweep, m.st.sweeps, m.st.bracket = i, n, result.Bracket{}
	m.mu.Unlock()
}

// SearchProbe says the search starts its probe number n (from 1) with bracket b.
func (m *Metrics) SearchProbe(n int, b result.Bracket) {
	m.mu.Lock()
	m.st.number, m.st.bracket = n, b
	m.mu.Unlock()
}

// Bracket records the search's bracket.
func (m *Metrics) Bracket(b result.Bracket) {
	m.mu.Lock()
	m.st.bracket = b
	m.mu.Unlock()
}

// Verdict counts a probe the search judged.
func (m *Metrics) Verdict(v result.Verdict) {
	if v == "" {
		return
	}
	m.mu.Lock()
	m.st.verdicts[v]++
	m.mu.Unlock()
}

// ProbeStart says a probe starts.
func (m *Metrics) ProbeStart(p Probe) {
	m.mu.Lock()
	m.st.running, m.st.probe, m.st.live, m.st.p99Ms = true, p, driver.Live{}, 0
	m.st.cur = [len(phases)]tally{}
	if m.command != "search" {
		m.st.number = 1
	}
	m.mu.Unlock()
}

// Live is the driver's OnSecond: the running probe's live figures.
func (m *Metrics) Live(v driver.Live) {
	m.mu.Lock()
	m.st.live = v
	m.mu.Unlock()
}

// Second is the driver's OnSummary: one summarised second of the series, with its
// latency and queue-wait histograms (µs; nil when empty), which it adds to its own.
func (m *Metrics) Second(s result.Second, lat, wait *hdrhistogram.Histogram) {
	i := phaseIndex(s.Phase)
	m.mu.Lock()
	defer m.mu.Unlock()
	m.st.cur[i].add(secondTally(s))
	if s.Committed > 0 {
		m.st.p99Ms = s.P99Ms
	}
	if lat != nil {
		m.st.lat[i].Merge(lat)
	}
	if wait != nil {
		m.st.wait[i].Merge(wait)
	}
}

// ProbeEnd says the probe ended with p (nil when it produced no result). The measured
// window's counters take its books (scheduled, committed, failed, rejected), the
// warm-up's its series, so at this point they equal the results file; the seconds
// summarised so far never exceed them, so no counter goes down. The server's CPU and
// wait events come from its observation.
func (m *Metrics) ProbeEnd(p *result.Probe) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.st.running = false
	m.st.probes++
	if p == nil {
		m.st.done[warm].add(m.st.cur[warm])
		m.st.done[meas].add(m.st.cur[meas])
		m.st.cur = [len(phases)]tally{}
		return
	}
	for _, s := range p.Series {
		if phaseIndex(s.Phase) == warm {
			m.st.done[warm].add(secondTally(s))
		}
	}
	m.st.done[meas].add(tally{offered: p.Scheduled, committed: p.Committed, rejected: p.Rejected, failed: p.Failed})
	m.st.cur = [len(phases)]tally{}
	o := p.Observation
	if o == nil {
		return
	}
	m.st.cpuSeconds += o.ServerCPUSeconds
	m.st.cpuShare, m.st.cpuKnown = o.ServerCPUShare, o.ServerLocal
	for _, w := range o.Waits {
		m.st.waitSamples[w.Event] += w.Samples
	}
	waits := append([]result.WaitShare(nil), o.Waits...)
	sort.SliceStable(waits, func(i, j int) bool { return waits[i].Share > waits[j].Share })
	m.st.waitShares = waits[:min(len(waits), TopWaits)]
}
