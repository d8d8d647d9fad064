package observe

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/pgceiling/pgceiling/internal/thousands"
	"github.com/pgceiling/pgceiling/result"
)

// Thresholds of the bottleneck rules.
const (
	// MinSamples is the fewest active-backend samples a line is derived from.
	MinSamples = 10
	// CPUBoundShare is the share of the server's cores above which a local server is
	// called CPU-bound.
	CPUBoundShare = 0.90
	// DominantShare is the share of active samples one category must reach to be named
	// the bottleneck.
	DominantShare = 0.40
)

// Bottleneck derives one line saying why the server stopped at this rate, from the
// observation of a probe (p may be nil: then the driver's own limits are unknown). The
// rules, first match wins:
//
//  1. the driver was the limit (p.DriverLimited): "client: driver-limited (reason)" —
//     the figure is the client's, not the server's;
//  2. fewer than MinSamples active samples: "too few active samples (n) to attribute";
//  3. a local server used at least CPUBoundShare of its cores: "server CPU-bound: 97 % of
//     its cores";
//  4. a local server's machine (which also runs the client, and anything else) was busy
//     for at least CPUBoundShare of its cores while the backends spent at least
//     DominantShare of their active samples on (or waiting for) a CPU: "machine
//     CPU-bound: 95 % of its cores busy, the server using 60 %; client and server share
//     this machine";
//  5. the wait events are grouped into categories — WAL flush (IO:WALSync, IO:WALWrite
//     and other IO:WAL* writes, LWLock:WALWrite), WAL insert (LWLock:WALInsert,
//     LWLock:WALBufMapping), synchronous replication (IPC:SyncRep), lock contention
//     (Lock:*), I/O (other IO:*), LWLock contention (other LWLock:*), backend CPU (the
//     CPU row: active with no wait event), and one category per other wait type; the
//     largest category, if it holds at least DominantShare of the active samples, is
//     named with its events: "WAL flush: IO:WALSync 58 % of active samples, 0.9 syncs
//     per commit", "lock contention: Lock:transactionid 41 % of active samples";
//  6. otherwise: "no single bottleneck (CPU 30 %, IO:WALSync 25 %, Lock:tuple 20 %)",
//     the three largest events.
//
// The steal rule (result.Stolen, the search's host_steal) adds an ending: when the
// hypervisor took at least result.StealLimit of the machine's CPU for other guests during
// the probe, "; the machine lost 43 % of its CPU to other guests (steal): …"; otherwise,
// when the probe broke down (by the default pass rule, result.DefaultMaxErrorRate) after
// at least result.StealOnsetLimit over the result.StealLeadS seconds before, "; it broke
// down in measured second 259, after the machine lost 18 % of its CPU to other guests
// (steal) in the 15 s before: …". The search judges such a probe host_steal; `run`, which
// does not judge, says it here.
func Bottleneck(o *result.Observation, p *result.Probe) string {
	line := bottleneck(o, p)
	if o == nil || line == "" {
		return line
	}
	s, ok := result.Stolen(o, p, result.DefaultMaxErrorRate)
	switch {
	case !ok:
	case s.AtBreakdown:
		return line + fmt.Sprintf("; it broke down in measured second %d, after the machine lost %s of its CPU to other guests (steal) in the %d s before: its failure may be its neighbours'",
			s.At, pct(s.Share), s.N)
	default:
		return line + fmt.Sprintf("; the machine lost %s of its CPU to other guests (steal): this probe measured its neighbours too", pct(s.Share))
	}
	return line
}

func bottleneck(o *result.Observation, p *result.Probe) string {
	if p != nil && p.DriverLimited {
		if p.DriverLimitReason != "" {
			return "client: driver-limited (" + p.DriverLimitReason + ")"
		}
		return "client: driver-limited"
	}
	if o == nil {
		return ""
	}
	var total int64
	for _, w := range o.Waits {
		total += w.Samples
	}
	if total < MinSamples {
		return fmt.Sprintf("too few active samples (%d) to attribute", total)
	}
	if o.ServerLocal && o.ServerCPUShare >= CPUBoundShare {
		return fmt.Sprintf("server CPU-bound: %s of its cores", pct(o.ServerCPUShare))
	}
	if o.ServerLocal && o.HostCPUShare >= CPUBoundShare && cpuShare(o.Waits, total) >= DominantShare {
		return fmt.Sprintf("machine CPU-bound: %s of its cores busy, the server using %s; client and server share this machine",
			pct(o.HostCPUShare), pct(o.ServerCPUShare))
	}
	type category struct {
		label  string
		share  float64
		events []result.WaitShare
	}
	byLabel := map[string]*category{}
	var cats []*category
	for _, w := range o.Waits {
		l := categoryOf(w.Event)
		c := byLabel[l]
		if c == nil {
			c = &category{label: l}
			byLabel[l] = c
			cats = append(cats, c)
		}
		share := float64(w.Samples) / float64(total)
		c.share += share
		c.events = append(c.events, result.WaitShare{Event: w.Event, Samples: w.Samples, Share: share})
	}
	sort.SliceStable(cats, func(i, j int) bool { return cats[i].share > cats[j].share })
	if top := cats[0]; top.share >= DominantShare {
		sort.SliceStable(top.events, func(i, j int) bool { return top.events[i].Samples > top.events[j].Samples })
		var line string
		if len(top.events) == 1 {
			line = fmt.Sprintf("%s: %s %s of active samples", top.label, top.events[0].Event, pct(top.share))
		} else {
			parts := make([]string, 0, 3)
			for _, e := range top.events[:min(3, len(top.events))] {
				parts = append(parts, e.Event+" "+pct(e.Share))
			}
			line = fmt.Sprintf("%s: %s of active samples (%s)", top.label, pct(top.share), strings.Join(parts, ", "))
		}
		switch top.label {
		case catWALFlush:
			if o.WAL.SyncsPerTx > 0 {
				line += fmt.Sprintf(", %.2g syncs per commit", o.WAL.SyncsPerTx)
				if ms := o.WAL.MsPerSync(); ms > 0 {
					line += fmt.Sprintf(" of %.2g ms each", ms)
				}
			}
		case catCPU:
			if o.ServerLocal {
				line += fmt.Sprintf(", server at %s of its cores", pct(o.ServerCPUShare))
			}
		}
		return line
	}
	all := make([]result.WaitShare, 0, len(o.Waits))
	for _, w := range o.Waits {
		all = append(all, result.WaitShare{Event: w.Event, Samples: w.Samples, Share: float64(w.Samples) / float64(total)})
	}
	sort.SliceStable(all, func(i, j int) bool { return all[i].Samples > all[j].Samples })
	parts := make([]string, 0, 3)
	for _, e := range all[:min(3, len(all))] {
		parts = append(parts, e.Event+" "+pct(e.Share))
	}
	return "no single bottleneck (" + strings.Join(parts, ", ") + ")"
}

// The category labels of the bottleneck rules.
const (
	catWALFlush  = "WAL flush"
	catWALInsert = "WAL insert"
	catSyncRep   = "synchronous replication"
	catLock      = "lock contention"
	catIO        = "I/O"
	catLWLock    = "LWLock contention"
	catCPU       = "backend CPU"
)

// categoryOf maps a wait event ("Type:Event" or "CPU") to its bottleneck category.
func categoryOf(event string) string {
	if event == CPUEvent {
		return catCPU
	}
	typ, ev, _ := strings.Cut(event, ":")
	switch typ {
	case "IO":
		if strings.HasPrefix(ev, "WAL") && !strings.Contains(ev, "Read") {
			return catWALFlush
		}
		return catIO
	case "LWLock":
		switch ev {
		case "WALWrite", "WALWriteLock":
			return catWALFlush
		case "WALInsert", "WALBufMapping", "WALBufMappingLock":
			return catWALInsert
		}
		return catLWLock
	case "Lock":
		return catLock
	case "IPC":
		if ev == "SyncRep" {
			return catSyncRep
		}
	}
	return "waits on " + typ
}

// cpuShare is the CPU row's share of the active samples.
func cpuShare(w []result.WaitShare, total int64) float64 {
	for _, e := range w {
		if e.Event == CPUEvent {
			return float64(e.Samples) / float64(total)
		}
	}
	return 0
}

func pct(f float64) string { return fmt.Sprintf("%.0f %%", f*100) }

// Finish completes a probe's observation once the driver has filled the probe: the
// client's CPU per transaction (from p.ClientCPUSeconds) and the bottleneck line, which
// now knows whether the driver was the limit. It does nothing without an observation.
func Finish(p *result.Probe) {
	o := p.Observation
	if o == nil {
		return
	}
	if p.Committed > 0 && p.ClientCPUSeconds > 0 {
		o.ClientCPUPerTxMs = p.ClientCPUSeconds * 1000 / float64(p.Committed)
	}
	o.Bottleneck = Bottleneck(o, p)
}

// SweepBottleneck is the bottleneck line of a sweep and the probe rate it describes (for
// Sweep.Bottleneck and Sweep.BottleneckRate): the line of the first probe above the knee
// that failed on the server's account (verdict fail or not_steady, with an observation),
// because that is where the limit shows; without one, the knee probe's own line. The line
// says which it is: "above the knee, at 3,318 tx/s: WAL flush: ..." or "at the knee,
// 3,100 tx/s: ...". Empty and 0 when neither probe has an observation.
func SweepBottleneck(s *result.Sweep) (line string, rate float64) {
	var above, knee *result.Probe
	for i := range s.Probes {
		p := &s.Probes[i]
		if p.Observation == nil {
			continue
		}
		switch {
		case p.TargetRate > s.Knee && (p.Verdict == result.Fail || p.Verdict == result.NotSteady):
			if above == nil || p.TargetRate < above.TargetRate {
				above = p
			}
		case p.Verdict == result.Pass && p.TargetRate == s.Knee && s.Knee > 0:
			knee = p
		}
	}
	p, where := above, "above the knee, at %s %s: %s"
	if p == nil {
		p, where = knee, "at the knee, %s %s: %s"
	}
	if p == nil {
		return "", 0
	}
	line = p.Observation.Bottleneck
	if line == "" {
		line = Bottleneck(p.Observation, p)
	}
	return fmt.Sprintf(where, rateText(p.TargetRate), result.RateUnit(s.Workload), line), p.TargetRate
}

// rateText formats a rate in transactions per second with thousands separators: whole
// numbers from 100 up ("3,318"), one decimal below ("12.5").
func rateText(v float64) string {
	dec := 0
	if v < 100 && v != math.Trunc(v) {
		dec = 1
	}
	return thousands.Format(v, dec)
}
