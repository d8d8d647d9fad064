package report

import (
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"testing"
	"time"

	"github.com/pgceiling/pgceiling/result"
)

// The fixtures under testdata/ are committed; -fixtures rewrites them from this generator.
// They are plausible results of a search (2 workloads x 2 synchronous_commit settings) and
// of a run, made by simulating a server with a fixed capacity per sweep, so every figure a
// report shows has a known origin.
var regenFixtures = flag.Bool("fixtures", false, "rewrite the results fixtures in testdata/")

func TestRegenerateFixtures(t *testing.T) {
	if !*regenFixtures {
		return // the fixtures are checked by the golden tests
	}
	for name, f := range map[string]*result.File{
		"search.json":    fixtureSearch(),
		"run.json":       fixtureRun(),
		"fsync-off.json": fixtureFsyncOff(),
	} {
		if err := result.Write(filepath.Join("testdata", name), f); err != nil {
			t.Fatal(err)
		}
	}
}

var fixtureStart = time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)

func fixtureDisclosure(fsync string) *result.Disclosure {
	d := &result.Disclosure{
		Version: "PostgreSQL 17.2",
		Settings: map[string]string{"fsync": fsync, "synchronous_commit": "on", "full_page_writes": "on",
			"wal_level": "replica", "wal_sync_method": "fdatasync", "commit_delay": "0", "shared_buffers": "128MB",
			"effective_cache_size": "4GB", "max_wal_size": "1GB", "checkpoint_timeout": "5min",
			"wal_compression": "off", "data_checksums": "off", "max_connections": "100"},
		Tables: []result.TableSize{
			{Name: "wallets", Rows: 10000, HeapBytes: 901120, IndexBytes: 245760, Indexes: 1},
			{Name: "transactions", Rows: 1000000, HeapBytes: 251658240, IndexBytes: 188743680, Indexes: 5},
			{Name: "audit_log", Rows: 1000000, HeapBytes: 104857600, IndexBytes: 62914560, Indexes: 2},
			{Name: "events", Rows: 0, HeapBytes: 8192, IndexBytes: 8192, Indexes: 1},
		},
		SharedBuffersBytes: 128 << 20, ClientCores: 2, ClientMemBytes: 8 << 30,
		ServerLocal: true, ServerCores: 2, ServerMemBytes: 8 << 30, Embedded: true,
	}
	for _, tb := range d.Tables {
		d.DataBytes += tb.HeapBytes + tb.IndexBytes
	}
	d.DataToSharedBuffers = math.Round(float64(d.DataBytes)/float64(d.SharedBuffersBytes)*100) / 100
	if fsync == "off" {
		d.Warnings = []string{"fsync=off: commits are not durable; a crash loses data and the ceiling is overstated (run with --allow-unsafe-server)"}
	}
	return d
}

// fixtureProbe simulates one probe at rate against a server that holds capacity tx/s.
func fixtureProbe(rng *rand.Rand, workload, sync string, target, capacity float64, start time.Time) result.Probe {
	const warmup, duration = 3, 12
	p := result.Probe{Workload: workload, SyncCommit: result.SyncCommit(sync), TargetRate: target, Seed: int64(target),
		Conns: 50, PoolWaitMs: 1000, StartedAt: start, WarmupS: warmup, DurationS: duration,
		RowsAtStart: 1000000, Server: result.ServerBrief{Version: "PostgreSQL 17.2", Fsync: "on", SynchronousCommit: "on"}}
	load := target / capacity
	base := 2.0
	if workload == "transfer" {
		base = 3.5
	}
	if sync == "on" {
		base += 1.5
	}
	var queue float64
	measured := 0
	for sec := 0; sec < warmup+duration; sec++ {
		offered := int64(math.Round(target * (1 + 0.03*rng.NormFloat64())))
		served := math.Min(float64(offered)+queue, capacity*(1+0.02*rng.NormFloat64()))
		queue += float64(offered) - served
		var rejected int64
		if queue > capacity { // waited longer than the 1 s pool wait
			rejected = int64(queue - capacity)
			queue = capacity
		}
		var failed result.Counts
		if load > 0.95 && rng.IntN(3) == 0 {
			failed[result.LockTimeout] = int64(1 + rng.IntN(int(load*3)+1))
			if workload == "transfer" {
				failed[result.Deadlock] = int64(rng.IntN(2))
			}
		}
		committed := int64(served) - failed.Total()
		qw := 1000 * queue / capacity
		p99 := base*(1+3*load*load) + qw + rng.Float64()
		s := result.Second{T: sec, Phase: result.PhaseWarmup, Offered: offered, Committed: committed,
			P50Ms: r2(base*(1+load) + qw/2), P99Ms: r2(p99), QueueWaitP99Ms: r2(qw), QueueDepth: int(queue),
			SchedLagMs: r2(0.2 + rng.Float64()*0.3)}
		s.Failed = failed
		s.Failed[result.PoolTimeout] = rejected
		if sec >= warmup {
			s.Phase = result.PhaseMeasure
			measured++
			p.Scheduled += offered
			p.Rejected += rejected
			for i := range failed {
				p.Failed[i] += failed[i]
			}
		}
		p.Series = append(p.Series, s)
		// A failing probe is cut as soon as its errors exceed the whole probe's budget.
		budget := 0.001 * target * duration
		if sec >= warmup && float64(p.FailedAndRejected()) > budget {
			p.CutShort = true
			p.CutReason = fmt.Sprintf("errors %d exceeded the probe's budget of %.0f", p.FailedAndRejected(), budget)
			break
		}
	}
	// Every arrival of the window that was neither failed nor rejected committed (the
	// queued ones during the drain).
	p.Committed = p.Scheduled - p.Failed.Total() - p.Rejected
	p.MeasuredS = float64(measured)
	// What was still queued when the window closed committed in the drain.
	p.DrainCommitted = min(int64(queue), p.Committed)
	for _, sec := range p.Series[warmup:] {
		p.CommittedInWindow += sec.Committed // whichever second's arrival it was
	}
	p.AchievedRate = math.Round(float64(p.CommittedInWindow)/p.MeasuredS*10) / 10
	if p.CutShort {
		p.CutBy = result.CutByErrors
	}
	var m result.Second // the measured seconds' mean p50 and p99
	for _, sec := range p.Series[warmup:] {
		m.P50Ms += sec.P50Ms / p.MeasuredS
		m.P99Ms += sec.P99Ms / p.MeasuredS
	}
	lat := func(scale float64) result.Latency {
		return result.Latency{Count: p.Committed, P50: r2(m.P50Ms * scale), P90: r2((m.P50Ms + m.P99Ms) / 2 * scale),
			P99: r2(m.P99Ms * scale), P999: r2(m.P99Ms * 1.8 * scale), Max: r2(m.P99Ms * 3 * scale), Mean: r2(m.P50Ms * 1.2 * scale)}
	}
	p.Latency = lat(1)
	p.Service = lat(0.5)
	q := maxQueueWait(p.Series)
	p.QueueWait = result.Latency{Count: p.Committed, P50: r2(q * 0.1), P90: r2(q * 0.5), P99: r2(q),
		P999: r2(q*1.5 + 0.5), Max: r2(q*2 + 1), Mean: r2(q * 0.2)}
	table := "transactions"
	if workload == "insert" {
		table = "events"
	}
	total := p.Committed + int64(target*warmup)
	p.Checks = result.Checks{Table: table, RowsBefore: 1000000, RowsAfter: 1000000 + total, RowDelta: total,
		CommittedTotal: total, RowsOK: true}
	if workload == "transfer" {
		ok := true
		p.Checks.BalanceOK = &ok
		p.Checks.BalanceBefore, p.Checks.BalanceAfter = "50000000.00", "50000000.00"
	}
	p.Skew = result.Skew{Exponent: 1, Keys: 10000, Picks: total, HottestShare: 0.1021, Top1PctShare: 0.5484}
	p.ClientCPUSeconds = r2(float64(p.Committed) * 0.00011)
	for _, sec := range p.Series[warmup:] {
		p.SchedLagP99Ms = math.Max(p.SchedLagP99Ms, sec.SchedLagMs)
	}
	p.Steady = fixtureSteady(p.Series[warmup:], p.PoolWaitMs)
	p.Restore = &result.Restore{Seconds: r2(0.4 + float64(total)/20000), TransactionsRows: total,
		VacuumedRelations: []string{"transactions", "audit_log"}}
	if workload != "insert" {
		p.Restore.AuditRows = total
	}
	if workload == "transfer" {
		p.Restore.WalletsRestored = min(total*2, 10000)
		p.Restore.VacuumedRelations = append(p.Restore.VacuumedRelations, "wallets")
	}
	if workload == "oltp" {
		// A bounded fraud check over a back-filled minute: it reads as much at the end of
		// the probe as at its start.
		p.FraudCheck = &result.CheckRead{Checks: total, WindowS: 60, Limit: 100, P50: 20, P99: 31, Mean: 20.4, Max: 44,
			FirstP50: 20, LastP50: 20}
		p.Backfill = &result.Backfill{Rows: int64(target * 60), Seconds: r2(target * 60 / 40000), WindowS: 60,
			Anchor: start, Rate: target}
	}
	p.Observation = fixtureObservation(workload, sync, load, p.Committed, p.MeasuredS)
	return p
}

func r2(v float64) float64 { return math.Round(v*100) / 100 }

// fixtureSteady reads the trend of the measured seconds' queue wait p99 as the
// steady-state rule would: a slope from the first to the last second with an interval
// around it, projected one probe length ahead from the interval's low end.
func fixtureSteady(measured []result.Second, limitMs float64) *result.Steady {
	n := len(measured)
	st := &result.Steady{Series: "queue_wait_p99", Seconds: n, Confidence: 0.95, LimitMs: limitMs, Verdict: "steady"}
	if n < 2 {
		st.Verdict = "too_short"
		return st
	}
	first, last := measured[0].QueueWaitP99Ms, measured[n-1].QueueWaitP99Ms
	st.LevelMs = r2((first + last) / 2)
	st.SlopeMsPerS = r2((last - first) / float64(n-1))
	st.SlopeLo, st.SlopeHi = r2(st.SlopeMsPerS-math.Abs(st.SlopeMsPerS)*0.3-0.05), r2(st.SlopeMsPerS+math.Abs(st.SlopeMsPerS)*0.3+0.05)
	st.ProjectedMs = r2(math.Max(0, last+st.SlopeLo*float64(n)))
	if st.SlopeLo > 0 && st.ProjectedMs > limitMs {
		st.Verdict = "growing"
	}
	return st
}

// fixtureObservation invents the wait profile a server shows at a given load.
func fixtureObservation(workload, sync string, load float64, committed int64, secs float64) *result.Observation {
	var w map[string]float64
	switch {
	case sync == "on":
		w = map[string]float64{"IO:WALSync": 0.55 * math.Min(load, 1.2), "LWLock:WALWrite": 0.1 * load, "CPU": 0.25}
	default:
		w = map[string]float64{"CPU": 0.6, "LWLock:WALInsert": 0.12 * load, "IO:DataFileRead": 0.08}
	}
	if workload == "transfer" {
		w["Lock:transactionid"] = 0.3 * load * load
		w["Lock:tuple"] = 0.05 * load
	}
	var sum float64
	for _, v := range w {
		sum += v
	}
	o := &result.Observation{SampleIntervalMs: 100, Samples: int64(secs * 10 * 20 * math.Min(load, 1.5))}
	for _, ev := range []string{"CPU", "IO:WALSync", "LWLock:WALWrite", "LWLock:WALInsert", "IO:DataFileRead", "Lock:transactionid", "Lock:tuple"} {
		if v, ok := w[ev]; ok {
			o.Waits = append(o.Waits, result.WaitShare{Event: ev, Samples: int64(v / sum * float64(o.Samples)), Share: r2(v/sum*100) / 100})
		}
	}
	o.WAL = result.WAL{Records: committed * 6, FPI: committed / 20, Bytes: committed * 1900, Writes: committed / 2,
		Syncs: committed / 3, WriteMs: r2(float64(committed) * 0.004), SyncMs: r2(float64(committed) * 0.3),
		BytesPerTx: 1900, SyncsPerTx: 0.33}
	if sync == "off" {
		o.WAL.Syncs, o.WAL.SyncsPerTx, o.WAL.SyncMs = committed/200, 0.005, r2(float64(committed)*0.002)
	}
	o.Checkpoints = 0
	o.BuffersBackend = committed / 50
	o.ServerLocal = true
	o.ServerCPUSeconds = r2(float64(committed) * 0.0006)
	o.ServerCPUShare = r2(math.Min(o.ServerCPUSeconds/secs/2, 1))
	o.ServerCPUPerTxMs = 0.6
	o.ClientCPUPerTxMs = 0.11
	top := o.Waits[0]
	for _, ws := range o.Waits {
		if ws.Share > top.Share {
			top = ws
		}
	}
	switch {
	case top.Event == "IO:WALSync":
		o.Bottleneck = fmt.Sprintf("WAL flush: IO:WALSync %.0f %% of active samples, %.2f syncs per commit", top.Share*100, o.WAL.SyncsPerTx)
	case top.Event == "CPU":
		o.Bottleneck = fmt.Sprintf("server CPU-bound: CPU %.0f %% of active samples, %.0f %% of its cores", top.Share*100, o.ServerCPUShare*100)
	default:
		o.Bottleneck = fmt.Sprintf("lock contention: %s %.0f %%", top.Event, top.Share*100)
	}
	return o
}

// fixtureSweep runs a simulated search: double from 100 until a failure, then bisect to 5 %.
func fixtureSweep(rng *rand.Rand, workload, sync string, capacity float64, start time.Time) result.Sweep {
	s := result.Sweep{Workload: workload, SyncCommit: result.SyncCommit(sync)}
	probe := func(r float64) bool {
		p := fixtureProbe(rng, workload, sync, r, capacity, start)
		start = start.Add(time.Duration(p.WarmupS+p.MeasuredS) * time.Second)
		p.Verdict, p.Reason = result.Pass, ""
		if p.CutShort || p.ErrorRate() > 0.001 {
			p.Verdict = result.Fail
			p.Reason = fmt.Sprintf("error rate %.2f %% > 0.10 %%", p.ErrorRate()*100)
		}
		if st := p.Steady; p.Verdict == result.Pass && st.Verdict == "growing" {
			// The simulated trend is noise the rule would not decide on: its interval
			// reaches zero, so nothing is projected beyond the last second.
			st.SlopeLo = min(st.SlopeLo, 0)
			st.ProjectedMs, st.Verdict = r2(p.Series[len(p.Series)-1].QueueWaitP99Ms), "steady"
		}
		s.ProbeMinutes += (p.WarmupS + p.MeasuredS) / 60
		s.Probes = append(s.Probes, p)
		return p.Verdict == result.Pass
	}
	lo, hi := 0.0, 0.0
	for r := 100.0; hi == 0; r *= 2 {
		if probe(r) {
			lo = r
		} else {
			hi = r
		}
	}
	for (hi-lo)/lo > 0.05 {
		mid := math.Round((lo + hi) / 2)
		if probe(mid) {
			lo = mid
		} else {
			hi = mid
		}
	}
	s.Knee, s.Bracket, s.Converged = lo, result.Bracket{Lo: lo, Hi: hi}, true
	s.Stop = fmt.Sprintf("converged: (hi-lo)/lo = %.1f %% <= 5 %%", (hi-lo)/lo*100)
	s.ProbeMinutes = r2(s.ProbeMinutes)
	s.Interval = &result.Interval{Lo: math.Round(lo * 0.96), Hi: math.Round((lo + hi) / 2 * 1.01), Level: 0.9,
		Midpoint: math.Round((lo + hi) / 2), Method: "logistic fit", Probes: len(s.Probes)}
	s.Repeats = 2
	// The bottleneck as the search records it: the first failing probe above the knee.
	for _, p := range s.Probes {
		if p.Verdict == result.Fail && p.TargetRate > lo && (s.BottleneckRate == 0 || p.TargetRate < s.BottleneckRate) {
			s.Bottleneck, s.BottleneckRate = p.Observation.Bottleneck, p.TargetRate
		}
	}
	return s
}

func fixtureSearch() *result.File {
	rng := rand.New(rand.NewPCG(1, 2))
	f := result.NewFile("search")
	f.RunID = "" // derived from the file at write (EnsureRunID): regenerated fixtures keep their goldens
	f.StartedAt = fixtureStart
	f.CommandLine = []string{"pgceiling", "search", "--workload", "oltp,transfer", "--sync-commit", "on,off",
		"--dsn", "postgres://bench:xxxxx@db.example:5432/bench", "--duration", "12s", "--warmup", "3s"}
	f.Config = map[string]string{"workload": "oltp,transfer", "sync-commit": "on,off", "duration": "12s",
		"warmup": "3s", "conns": "50", "pool-wait": "1s", "max-error-rate": "0.001", "precision": "0.05"}
	f.Server = fixtureDisclosure("on")
	at := fixtureStart
	for _, c := range []struct {
		w, s string
		cap  float64
	}{{"oltp", "on", 930}, {"oltp", "off", 2260}, {"transfer", "on", 610}, {"transfer", "off", 1180}} {
		sw := fixtureSweep(rng, c.w, c.s, c.cap, at)
		at = at.Add(time.Duration(sw.ProbeMinutes * float64(time.Minute)))
		f.Sweeps = append(f.Sweeps, sw)
	}
	// oltp sync=off as a newer search writes it: the line names its rate itself.
	off := &f.Sweeps[1]
	off.Bottleneck = fmt.Sprintf("above the knee, at %s tx/s: %s", rate(off.BottleneckRate), off.Bottleneck)
	off.StartFrom = "results/oltp-previous.json"
	// transfer sync=on: the first rate above the knee failed by its trend, not its errors.
	tr := &f.Sweeps[2]
	for i := range tr.Probes {
		p := &tr.Probes[i]
		if p.TargetRate != tr.BottleneckRate {
			continue
		}
		p.Verdict, p.CutBy = result.NotSteady, result.CutByTrend
		p.Steady = &result.Steady{Series: "queue_wait_p99", Seconds: 9, LevelMs: 310, SlopeMsPerS: 82.4, SlopeLo: 51.2,
			SlopeHi: 114.9, Confidence: 0.95, ProjectedMs: 1480, LimitMs: 1000, Verdict: "growing"}
		p.CutReason = "queue wait p99 grows +82.4 ms/s (51.2-114.9): 1,480 ms projected > 1,000 ms pool wait"
		p.Reason = "not steady: " + p.CutReason
		p.Observation.WaitGrowth = &result.WaitShift{Event: "Lock:transactionid", FirstShare: 0.12, LastShare: 0.41}
	}
	f.FinishedAt = at
	return f
}

func fixtureRun() *result.File {
	rng := rand.New(rand.NewPCG(3, 4))
	f := result.NewFile("run")
	f.RunID = "" // derived from the file at write (EnsureRunID): regenerated fixtures keep their goldens
	f.StartedAt = fixtureStart
	f.CommandLine = []string{"pgceiling", "run", "--workload", "transfer", "--rate", "500", "--duration", "12s", "--warmup", "3s"}
	f.Config = map[string]string{"workload": "transfer", "rate": "500", "duration": "12s", "warmup": "3s", "conns": "50"}
	f.Server = fixtureDisclosure("on")
	p := fixtureProbe(rng, "transfer", "on", 500, 610, fixtureStart)
	f.Sweeps = []result.Sweep{{Workload: "transfer", SyncCommit: "on", Probes: []result.Probe{p},
		ProbeMinutes: r2((p.WarmupS + p.MeasuredS) / 60), Bottleneck: p.Observation.Bottleneck}}
	f.FinishedAt = fixtureStart.Add(15 * time.Second)
	return f
}

func fixtureFsyncOff() *result.File {
	rng := rand.New(rand.NewPCG(5, 6))
	f := result.NewFile("search")
	f.RunID = "" // derived from the file at write (EnsureRunID): regenerated fixtures keep their goldens
	f.StartedAt = fixtureStart
	f.CommandLine = []string{"pgceiling", "search", "--workload", "insert", "--sync-commit", "on", "--allow-unsafe-server"}
	f.Config = map[string]string{"workload": "insert", "sync-commit": "on", "allow-unsafe-server": "true"}
	f.Server = fixtureDisclosure("off")
	f.Warnings = []string{"--allow-unsafe-server: the server runs with fsync=off"}
	sw := fixtureSweep(rng, "insert", "on", 5200, fixtureStart)
	for i := range sw.Probes {
		p := &sw.Probes[i]
		p.Server.Fsync = "off"
		if p.TargetRate >= 6400 { // the client could not keep up either
			p.DriverLimited, p.DriverLimitReason = true, "scheduler lag 45 ms behind intended arrivals"
		}
	}
	// As an older search wrote it: no interval, the knee probe's bottleneck line.
	sw.Interval, sw.Repeats, sw.BottleneckRate = nil, 0, 0
	if k := kneeProbe(&sw); k != nil {
		sw.Bottleneck = k.Observation.Bottleneck
	}
	f.Sweeps = []result.Sweep{sw}
	f.FinishedAt = fixtureStart.Add(10 * time.Minute)
	return f
}

func maxQueueWait(series []result.Second) float64 {
	var m float64
	for _, s := range series {
		m = math.Max(m, s.QueueWaitP99Ms)
	}
	return m
}
