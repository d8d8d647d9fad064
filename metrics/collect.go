package metrics

import (
	"maps"
	"sort"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/pgceiling/pgceiling/result"
)

func desc(name, help string, labels ...string) *prometheus.Desc {
	return prometheus.NewDesc("pgceiling_"+name, help, labels, nil)
}

// The exported metrics; docs/metrics.md describes each (keep the two in step).
var (
	descInfo      = desc("info", "The command serving these metrics and pgceiling's version.", "command", "version")
	descOffered   = desc("offered_total", "Arrivals offered (scheduled) by intended time, by phase; phase measure equals the results file's scheduled at the end of each probe.", "phase")
	descCommitted = desc("committed_total", "Arrivals committed, by phase of their intended time; phase measure equals the results file's committed at the end of each probe.", "phase")
	descFailed    = desc("failed_total", "Arrivals failed, by phase and error class (pool_timeout is rejected_total).", "phase", "class")
	descRejected  = desc("rejected_total", "Arrivals rejected because they did not start within --pool-wait (pool_timeout), by phase.", "phase")
	descLatency   = desc("latency_seconds", "Latency of committed arrivals from the intended start to the end of COMMIT, by phase.", "phase")
	descQueueWait = desc("queue_wait_seconds", "Queue wait of started arrivals, from the intended start to the start on a connection, by phase.", "phase")
	descProbes    = desc("probes_total", "Probes ended.")
	descRunning   = desc("probe_running", "1 while a probe runs, else 0.")
	descProbeInfo = desc("probe_info", "The current (or last) probe's sweep: workload and synchronous_commit.", "workload", "sync_commit")
	descRate      = desc("probe_target_rate", "The current (or last) probe's offered rate, transactions per second.")
	descSweep     = desc("probe_sweep", "The current probe's sweep number, from 1.")
	descSweeps    = desc("probe_sweeps", "Sweeps in the command.")
	descNumber    = desc("probe_number", "The current probe's number within its sweep, from 1 (calibration probes keep the number of the probe they precede).")
	descPhase     = desc("probe_phase", "1 for the phase the current probe is in (warmup, measure, drain), else 0.", "phase")
	descElapsed   = desc("probe_elapsed_seconds", "Time since the current probe started, warm-up included.")
	descLiveOff   = desc("probe_offered_rate", "Arrivals issued per second over the driver's last one-second tick.")
	descLiveCom   = desc("probe_committed_rate", "Commits per second over the driver's last one-second tick.")
	descQueue     = desc("probe_queue", "Arrivals waiting for a connection now.")
	descP99       = desc("probe_p99_latency_seconds", "p99 latency of the latest summarised second of the current probe.")
	descLo        = desc("search_bracket_low", "The search's bracket: the highest passing rate so far, tx/s (0: none yet).")
	descHi        = desc("search_bracket_high", "The search's bracket: the lowest failing rate so far, tx/s (0: none yet).")
	descVerdicts  = desc("search_verdicts_total", "Probes the search judged, by verdict.", "verdict")
	descCPUSec    = desc("server_cpu_seconds_total", "CPU time of the server's processes during measured windows (a server on this machine only).")
	descCPUShare  = desc("server_cpu_ratio", "Share of the server's cores its processes used in the last probe's measured window (a server on this machine only).")
	descWaitSamp  = desc("wait_samples_total", "Samples of pgceiling's active backends by wait event (type:event, or CPU), measured windows.", "event")
	descWaitShare = desc("wait_share", "Share of the last probe's active-backend samples of its top wait events.", "event")
)

var allDescs = []*prometheus.Desc{descInfo, descOffered, descCommitted, descFailed, descRejected, descLatency,
	descQueueWait, descProbes, descRunning, descProbeInfo, descRate, descSweep, descSweeps, descNumber, descPhase,
	descElapsed, descLiveOff, descLiveCom, descQueue, descP99, descLo, descHi, descVerdicts, descCPUSec,
	descCPUShare, descWaitSamp, descWaitShare}

// Describe implements prometheus.Collector.
func (m *Metrics) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range allDescs {
		ch <- d
	}
}

// Collect implements prometheus.Collector: a copy of the state is taken under the lock
// (the histograms cloned), and the metrics are made from it outside.
func (m *Metrics) Collect(ch chan<- prometheus.Metric) {
	m.mu.Lock()
	s := m.st
	var books [len(phases)]tally
	for i := range phases {
		books[i] = s.done[i]
		books[i].add(s.cur[i])
		s.lat[i], s.wait[i] = s.lat[i].Clone(), s.wait[i].Clone()
	}
	verdicts, waitSamples := maps.Clone(s.verdicts), maps.Clone(s.waitSamples)
	m.mu.Unlock()

	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	counter := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v, labels...)
	}
	gauge(descInfo, 1, m.command, result.ToolVersion)
	for i, ph := range phases {
		b := books[i]
		counter(descOffered, float64(b.offered), ph)
		counter(descCommitted, float64(b.committed), ph)
		counter(descRejected, float64(b.rejected), ph)
		for c := range result.NumClasses {
			if c != result.PoolTimeout {
				counter(descFailed, float64(b.failed[c]), ph, c.String())
			}
		}
		histogram(ch, descLatency, s.lat[i], ph)
		histogram(ch, descQueueWait, s.wait[i], ph)
	}
	counter(descProbes, float64(s.probes))
	gauge(descRunning, b2f(s.running))
	if s.probe.Workload != "" {
		gauge(descProbeInfo, 1, s.probe.Workload, string(s.probe.SyncCommit))
	}
	gauge(descRate, s.probe.Rate)
	gauge(descSweep, float64(s.sweep))
	gauge(descSweeps, float64(s.sweeps))
	gauge(descNumber, float64(s.number))
	for _, ph := range []string{result.PhaseWarmup, result.PhaseMeasure, result.PhaseDrain} {
		gauge(descPhase, b2f(s.running && s.live.Phase == ph), ph)
	}
	if s.running {
		gauge(descElapsed, s.live.Elapsed.Seconds())
		gauge(descLiveOff, s.live.OfferedRate)
		gauge(descLiveCom, s.live.AchievedRate)
		gauge(descQueue, float64(s.live.Queue))
		gauge(descP99, s.p99Ms/1000)
	}
	if m.command == "search" {
		gauge(descLo, s.bracket.Lo)
		gauge(descHi, s.bracket.Hi)
		for _, v := range sortedKeys(verdicts) {
			counter(descVerdicts, float64(verdicts[v]), string(v))
		}
	}
	if s.cpuKnown {
		counter(descCPUSec, s.cpuSeconds)
		gauge(descCPUShare, s.cpuShare)
	}
	for _, e := range sortedKeys(waitSamples) {
		counter(descWaitSamp, float64(waitSamples[e]), e)
	}
	for _, w := range s.waitShares {
		gauge(descWaitShare, w.Share, w.Event)
	}
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

func sortedKeys[K ~string, V any](m map[K]V) []K {
	ks := make([]K, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Slice(ks, func(i, j int) bool { return ks[i] < ks[j] })
	return ks
}

// histogram sends h (µs) as a Prometheus histogram in seconds with the fixed Buckets.
// A bucket counts the values whose HDR bucket starts at or below its bound, so the
// counts are exact to the histogram's 3 significant digits; the sum is the HDR mean
// times the count, to the same precision.
func histogram(ch chan<- prometheus.Metric, d *prometheus.Desc, h *hdrhistogram.Histogram, labels ...string) {
	counts := make(map[float64]uint64, len(Buckets))
	var cum uint64
	i := 0
	for _, bar := range h.Distribution() {
		if bar.Count == 0 {
			continue
		}
		for i < len(Buckets) && float64(bar.From) > Buckets[i]*1e6 {
			counts[Buckets[i]] = cum
			i++
		}
		cum += uint64(bar.Count)
	}
	for ; i < len(Buckets); i++ {
		counts[Buckets[i]] = cum
	}
	n := uint64(h.TotalCount())
	ch <- prometheus.MustNewConstHistogram(d, n, h.Mean()*float64(n)/1e6, counts, labels...)
}
