package fleet

import (
	"fmt"
	"slices"
	"strings"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/pgceiling/pgceiling/driver"
	"github.com/pgceiling/pgceiling/result"
)

// part is one driver's upload, decoded.
type part struct {
	rep Report
	h   hists
}

// merge makes one probe of the drivers' parts of plan (parts[0] is the leader's, whose
// probe carries the server's side: observation, preparation, brief). missing are the
// drivers whose parts never came. Books add up, the histograms merge exactly, the
// per-second series adds counts (its percentiles are the worst driver's).
func merge(plan Plan, parts []part, missing []int) *result.Probe {
	base := *parts[0].rep.Probe
	m := &base
	m.TargetRate, m.Seed = plan.Total, plan.SeedBase
	m.Scheduled, m.Committed, m.Rejected, m.Retries = 0, 0, 0, 0
	m.Failed = result.Counts{}
	m.CommittedInWindow, m.DrainCommitted, m.AchievedRate, m.Late = 0, 0, 0, 0
	m.ClientCPUSeconds, m.DriverThreads, m.Conns, m.ClientCPUPerTxMs = 0, 0, 0, 0
	m.Loops, m.LoopBusy, m.LoopsAddedS = 0, nil, nil
	m.Series = nil
	m.Checks.CommittedTotal, m.Checks.Uncertain, m.Checks.Problems = 0, 0, nil
	m.DriverLimited, m.DriverLimitReason = false, ""
	fl := &result.Fleet{Drivers: plan.Drivers, Missing: missing}
	lat, svc, wait := newHist(), newHist(), newHist()
	for _, pt := range parts {
		p, id := pt.rep.Probe, pt.rep.Driver
		if p == nil {
			fl.Parts = append(fl.Parts, result.FleetPart{Driver: id, Host: pt.rep.Host, SkewMs: pt.rep.OffsetMs,
				RTTMs: pt.rep.RTTMs, Error: pt.rep.Error})
			if m.Error == "" {
				m.Error = fmt.Sprintf("driver %d: %s", id, pt.rep.Error)
			}
			continue
		}
		m.Scheduled += p.Scheduled
		m.Committed += p.Committed
		m.Rejected += p.Rejected
		m.Retries += p.Retries
		for c := range m.Failed {
			m.Failed[c] += p.Failed[c]
		}
		m.CommittedInWindow += p.CommittedInWindow
		m.DrainCommitted += p.DrainCommitted
		m.AchievedRate += p.AchievedRate
		m.MeasuredS = max(m.MeasuredS, p.MeasuredS)
		m.Late += p.Late
		m.ClientCPUSeconds += p.ClientCPUSeconds
		m.DriverThreads += p.DriverThreads
		m.Conns += p.Conns
		// Every driver's loops, in driver order: loop_busy and loops_added_s list them all.
		m.Loops += p.Loops
		m.LoopBusy = append(m.LoopBusy, p.LoopBusy...)
		m.LoopsAddedS = append(m.LoopsAddedS, p.LoopsAddedS...)
		m.SchedLagP99Ms = max(m.SchedLagP99Ms, p.SchedLagP99Ms)
		m.Checks.CommittedTotal += p.Checks.CommittedTotal
		m.Checks.Uncertain += p.Checks.Uncertain
		for _, pr := range p.Checks.Problems {
			if !rowProblem(pr) {
				m.Checks.Problems = append(m.Checks.Problems, fmt.Sprintf("driver %d: %s", id, pr))
			}
		}
		if p.DriverLimited && !m.DriverLimited {
			m.DriverLimited, m.DriverLimitReason = true, fmt.Sprintf("driver %d: %s", id, p.DriverLimitReason)
		}
		if p.CutShort && !m.CutShort {
			m.CutShort, m.CutBy, m.CutReason = true, p.CutBy, fmt.Sprintf("driver %d: %s", id, p.CutReason)
		}
		m.Interrupted = m.Interrupted || p.Interrupted
		if p.Error != "" && m.Error == "" {
			m.Error = fmt.Sprintf("driver %d: %s", id, p.Error)
		}
		m.Series = addSeries(m.Series, p.Series)
		for _, x := range [][2]*hdrhistogram.Histogram{{lat, pt.h.lat}, {svc, pt.h.svc}, {wait, pt.h.wait}} {
			if x[1] != nil {
				x[0].Merge(x[1])
			}
		}
		fl.Parts = append(fl.Parts, result.FleetPart{Driver: id, Host: pt.rep.Host, SkewMs: pt.rep.OffsetMs,
			RTTMs: pt.rep.RTTMs, LateMs: pt.rep.LateMs, TargetRate: p.TargetRate, AchievedRate: p.AchievedRate,
			Scheduled: p.Scheduled, Committed: p.Committed, Failed: p.FailedAndRejected(),
			ClientCPUS: p.ClientCPUSeconds, Engine: p.Engine, CutReason: p.CutReason, Error: p.Error})
	}
	for _, pt := range fl.Parts {
		fl.MaxSkewMs = max(fl.MaxSkewMs, abs(pt.SkewMs))
	}
	m.Latency, m.Service, m.QueueWait = driver.Summary(lat), driver.Summary(svc), driver.Summary(wait)
	if m.Checks.CommittedTotal > 0 {
		m.ClientCPUPerTxMs = m.ClientCPUSeconds * 1000 / float64(m.Checks.CommittedTotal)
	}
	if len(missing) > 0 {
		m.Error = fmt.Sprintf("driver %s sent no results (gone mid-probe?); the probe keeps the other drivers' parts",
			joinInts(missing))
	}
	// The leader's observer divided the server's totals by the leader's commits alone.
	if o, lc := m.Observation, parts[0].rep.Probe.Committed; o != nil && m.Committed > 0 && lc > 0 {
		o2 := *o
		f := float64(lc) / float64(m.Committed)
		o2.WAL.BytesPerTx *= f
		o2.WAL.SyncsPerTx *= f
		o2.ServerCPUPerTxMs *= f
		o2.ClientCPUPerTxMs = 0 // observe.Finish recomputes it from the merged figures
		m.Observation = &o2
	}
	m.Fleet = fl
	return m
}

// rowProblem: the driver's own row check, which cannot hold while other drivers insert
// too; the leader checks the rows of the whole fleet instead.
func rowProblem(s string) bool {
	return strings.HasPrefix(s, "ROW MISMATCH") || strings.HasPrefix(s, "cannot count")
}

// addSeries adds b's seconds into a by index: counts add up, percentiles and lags are
// the worst driver's, queue depths add up.
func addSeries(a, b []result.Second) []result.Second {
	for i, s := range b {
		if i >= len(a) {
			a = append(a, s)
			continue
		}
		d := &a[i]
		d.Offered += s.Offered
		d.Committed += s.Committed
		for c := range d.Failed {
			d.Failed[c] += s.Failed[c]
		}
		d.P50Ms = max(d.P50Ms, s.P50Ms)
		d.P99Ms = max(d.P99Ms, s.P99Ms)
		d.QueueWaitP99Ms = max(d.QueueWaitP99Ms, s.QueueWaitP99Ms)
		d.QueueDepth += s.QueueDepth
		d.SchedLagMs = max(d.SchedLagMs, s.SchedLagMs)
		d.SchedLagP99Ms = max(d.SchedLagP99Ms, s.SchedLagP99Ms)
	}
	return a
}

// newHist is a histogram with the driver's range and precision (1 µs to 60 s, 3 digits).
func newHist() *hdrhistogram.Histogram { return hdrhistogram.New(1, 60_000_000, 3) }

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}

func joinInts(xs []int) string {
	s := make([]string, len(xs))
	for i, x := range slices.Sorted(slices.Values(xs)) {
		s[i] = fmt.Sprint(x)
	}
	return strings.Join(s, ", ")
}
