package observe

import (
	"strings"
	"testing"

	"github.com/pgceiling/pgceiling/result"
)

// waits builds a wait list from event/sample pairs.
func waits(pairs ...any) []result.WaitShare {
	var out []result.WaitShare
	for i := 0; i < len(pairs); i += 2 {
		out = append(out, result.WaitShare{Event: pairs[i].(string), Samples: int64(pairs[i+1].(int))})
	}
	return out
}

func TestBottleneck(t *testing.T) {
	for _, tc := range []struct {
		name string
		o    *result.Observation
		p    *result.Probe
		want string
	}{
		{"driver limited wins", &result.Observation{Waits: waits("IO:WALSync", 90)},
			&result.Probe{DriverLimited: true, DriverLimitReason: "scheduler lag 40 ms"},
			"client: driver-limited (scheduler lag 40 ms)"},
		{"driver limited, no reason", nil, &result.Probe{DriverLimited: true}, "client: driver-limited"},
		{"no observation", nil, nil, ""},
		{"too few samples", &result.Observation{Waits: waits("CPU", 3, "IO:WALSync", 2)}, nil,
			"too few active samples (5) to attribute"},
		{"server CPU-bound", &result.Observation{Waits: waits("CPU", 50, "IO:WALSync", 50), ServerLocal: true, ServerCPUShare: 0.97}, nil,
			"server CPU-bound: 97 % of its cores"},
		{"machine CPU-bound", &result.Observation{Waits: waits("CPU", 50, "IO:WALSync", 50), ServerLocal: true, ServerCPUShare: 0.6, HostCPUShare: 0.95}, nil,
			"machine CPU-bound: 95 % of its cores busy, the server using 60 %; client and server share this machine"},
		{"server CPU-bound before machine", &result.Observation{Waits: waits("CPU", 100), ServerLocal: true, ServerCPUShare: 0.92, HostCPUShare: 0.99}, nil,
			"server CPU-bound: 92 % of its cores"},
		{"busy machine, but the backends wait on locks", &result.Observation{Waits: waits("Lock:tuple", 70, "CPU", 30), ServerLocal: true, ServerCPUShare: 0.01, HostCPUShare: 1}, nil,
			"lock contention: Lock:tuple 70 % of active samples"},
		{"busy client machine, remote server", &result.Observation{Waits: waits("IO:WALSync", 60, "CPU", 40), HostCPUShare: 0.99, WAL: result.WAL{SyncsPerTx: 1}}, nil,
			"WAL flush: IO:WALSync 60 % of active samples, 1 syncs per commit"},
		{"remote server's CPU share is not used", &result.Observation{Waits: waits("IO:WALSync", 30, "CPU", 70), ServerCPUShare: 0.97}, nil,
			"backend CPU: CPU 70 % of active samples"},
		{"WAL flush single event", &result.Observation{Waits: waits("IO:WALSync", 58, "CPU", 30, "Lock:tuple", 12), WAL: result.WAL{SyncsPerTx: 0.9}}, nil,
			"WAL flush: IO:WALSync 58 % of active samples, 0.9 syncs per commit"},
		{"WAL flush summed over its events", &result.Observation{Waits: waits("CPU", 35, "IO:WALSync", 30, "LWLock:WALWrite", 25, "IO:WALWrite", 10), WAL: result.WAL{SyncsPerTx: 0.25}}, nil,
			"WAL flush: 65 % of active samples (IO:WALSync 30 %, LWLock:WALWrite 25 %, IO:WALWrite 10 %), 0.25 syncs per commit"},
		{"WAL flush with the sync time", &result.Observation{Waits: waits("IO:WALSync", 60, "CPU", 40), WAL: result.WAL{Syncs: 3000, SyncMs: 1080, SyncsPerTx: 0.73}}, nil,
			"WAL flush: IO:WALSync 60 % of active samples, 0.73 syncs per commit of 0.36 ms each"},
		{"lock contention", &result.Observation{Waits: waits("Lock:transactionid", 41, "Lock:tuple", 20, "CPU", 39)}, nil,
			"lock contention: 61 % of active samples (Lock:transactionid 41 %, Lock:tuple 20 %)"},
		{"lock contention single", &result.Observation{Waits: waits("Lock:transactionid", 41, "CPU", 30, "IO:WALSync", 29)}, nil,
			"lock contention: Lock:transactionid 41 % of active samples"},
		{"data file I/O, WAL read is not a flush", &result.Observation{Waits: waits("IO:DataFileRead", 35, "IO:WALRead", 10, "CPU", 30, "LWLock:WALWrite", 25)}, nil,
			"I/O: 45 % of active samples (IO:DataFileRead 35 %, IO:WALRead 10 %)"},
		{"WAL insert", &result.Observation{Waits: waits("LWLock:WALInsert", 50, "CPU", 50)}, nil,
			"WAL insert: LWLock:WALInsert 50 % of active samples"},
		{"other LWLock", &result.Observation{Waits: waits("LWLock:BufferMapping", 45, "CPU", 55)}, nil,
			"backend CPU: CPU 55 % of active samples"},
		{"synchronous replication", &result.Observation{Waits: waits("IPC:SyncRep", 80, "CPU", 20)}, nil,
			"synchronous replication: IPC:SyncRep 80 % of active samples"},
		{"other wait type", &result.Observation{Waits: waits("BufferPin:BufferPin", 60, "CPU", 40)}, nil,
			"waits on BufferPin: BufferPin:BufferPin 60 % of active samples"},
		{"local CPU below the bound", &result.Observation{Waits: waits("CPU", 80, "IO:WALSync", 20), ServerLocal: true, ServerCPUShare: 0.45}, nil,
			"backend CPU: CPU 80 % of active samples, server at 45 % of its cores"},
		{"no single bottleneck", &result.Observation{Waits: waits("CPU", 30, "IO:WALSync", 25, "Lock:tuple", 20, "IO:DataFileRead", 15, "Client:ClientRead", 10)}, nil,
			"no single bottleneck (CPU 30 %, IO:WALSync 25 %, Lock:tuple 20 %)"},
		{"probe without driver limit", &result.Observation{Waits: waits("Lock:tuple", 100)}, &result.Probe{},
			"lock contention: Lock:tuple 100 % of active samples"},
	} {
		if got := Bottleneck(tc.o, tc.p); got != tc.want {
			t.Errorf("%s: Bottleneck(%+v, %+v) =\n  %q\nwant\n  %q", tc.name, tc.o, tc.p, got, tc.want)
		}
	}
}

func TestFinish(t *testing.T) {
	p := &result.Probe{Committed: 2000, ClientCPUSeconds: 3, DriverLimited: true,
		Observation: &result.Observation{Waits: waits("IO:WALSync", 100), Bottleneck: "WAL flush: IO:WALSync 100 % of active samples"}}
	Finish(p)
	if p.Observation.ClientCPUPerTxMs != 1.5 || p.Observation.Bottleneck != "client: driver-limited" {
		t.Errorf("Finish: client CPU %g ms/tx, bottleneck %q; want 1.5 and driver-limited", p.Observation.ClientCPUPerTxMs, p.Observation.Bottleneck)
	}
	empty := &result.Probe{Committed: 10}
	Finish(empty) // no observation: nothing to do, no panic
	if empty.Observation != nil {
		t.Errorf("Finish made an observation: %+v", empty.Observation)
	}
}

func TestSweepBottleneck(t *testing.T) {
	obs := func(line string) *result.Observation { return &result.Observation{Bottleneck: line} }
	for _, tc := range []struct {
		name     string
		s        result.Sweep
		want     string
		wantRate float64
	}{
		{"first failing probe above the knee", result.Sweep{Knee: 3100, Probes: []result.Probe{
			{TargetRate: 500, Verdict: result.Pass, Observation: obs("a")},
			{TargetRate: 4000, Verdict: result.Fail, Observation: obs("b")},
			{TargetRate: 3100, Verdict: result.Pass, Observation: obs("knee")},
			{TargetRate: 3318, Verdict: result.NotSteady, Observation: obs("WAL flush")},
			{TargetRate: 3200, Verdict: result.DriverLimited, Observation: obs("client")},
		}}, "above the knee, at 3,318 tx/s: WAL flush", 3318},
		{"no failing probe: the knee's", result.Sweep{Knee: 1000, Probes: []result.Probe{
			{TargetRate: 1000, Verdict: result.Pass, Observation: obs("knee")},
			{TargetRate: 1200, Verdict: result.Fault},
		}}, "at the knee, 1,000 tx/s: knee", 1000},
		{"failing probe without an observation: the knee's", result.Sweep{Knee: 1000, Probes: []result.Probe{
			{TargetRate: 1000, Verdict: result.Pass, Observation: obs("knee")},
			{TargetRate: 1100, Verdict: result.Fail},
		}}, "at the knee, 1,000 tx/s: knee", 1000},
		{"line derived when missing", result.Sweep{Knee: 10, Probes: []result.Probe{
			{TargetRate: 10, Verdict: result.Pass, Observation: &result.Observation{Waits: waits("CPU", 100)}},
		}}, "at the knee, 10 tx/s: backend CPU: CPU 100 % of active samples", 10},
		{"fractional low rate", result.Sweep{Knee: 12.5, Probes: []result.Probe{
			{TargetRate: 12.5, Verdict: result.Pass, Observation: obs("x")},
		}}, "at the knee, 12.5 tx/s: x", 12.5},
		{"copy's rates are rows/s", result.Sweep{Workload: "copy", Knee: 90000, Probes: []result.Probe{
			{TargetRate: 90000, Verdict: result.Pass, Observation: obs("knee")},
		}}, "at the knee, 90,000 rows/s: knee", 90000},
		{"nothing observed", result.Sweep{Knee: 10, Probes: []result.Probe{{TargetRate: 10, Verdict: result.Pass}}}, "", 0},
	} {
		got, rate := SweepBottleneck(&tc.s)
		if got != tc.want || rate != tc.wantRate {
			t.Errorf("%s: SweepBottleneck = %q, %g; want %q, %g", tc.name, got, rate, tc.want, tc.wantRate)
		}
	}
}

func TestRateText(t *testing.T) {
	for v, want := range map[float64]string{0: "0", 12.5: "12.5", 99: "99", 100: "100", 999.6: "1,000",
		3318: "3,318", 1234567: "1,234,567"} {
		if got := rateText(v); got != want {
			t.Errorf("rateText(%g) = %q, want %q", v, got, want)
		}
	}
}

func TestBottleneckSaysSteal(t *testing.T) {
	waits := []result.WaitShare{{Event: "Lock:tuple", Samples: 80, Share: 0.8}, {Event: "CPU", Samples: 20, Share: 0.2}}
	for _, tc := range []struct {
		steal float64
		want  bool
	}{{0, false}, {0.09, false}, {0.43, true}} {
		o := &result.Observation{Waits: waits, Samples: 100, HostStealShare: tc.steal}
		line := Bottleneck(o, nil)
		if got := strings.Contains(line, "lost 43 % of its CPU to other guests (steal)"); got != tc.want || !strings.HasPrefix(line, "lock contention") {
			t.Errorf("Bottleneck(steal %.2f) = %q; want the lock line, steal named: %v", tc.steal, line, tc.want)
		}
	}
}

// TestBottleneckSaysStealAtBreakdown: a probe that broke down after a burst of steal,
// under the probe's own average limit, says so (what `run` shows, which does not judge);
// the same burst after the breakdown, or a probe that did not break down, does not.
func TestBottleneckSaysStealAtBreakdown(t *testing.T) {
	waits := []result.WaitShare{{Event: "Lock:tuple", Samples: 80, Share: 0.8}, {Event: "CPU", Samples: 20, Share: 0.2}}
	probe := func(badAt int, burstFrom, burstTo int) *result.Probe {
		p := &result.Probe{}
		steal := make([]float64, 60)
		for m := 0; m < 60; m++ {
			s := result.Second{T: 5 + m, Phase: result.PhaseMeasure, Offered: 1000}
			if badAt >= 0 && m >= badAt {
				s.Failed[result.PoolTimeout] = 200
			}
			p.Series = append(p.Series, s)
			if m >= burstFrom && m <= burstTo {
				steal[m] = 0.2
			}
		}
		p.Observation = &result.Observation{Waits: waits, Samples: 100, HostStealShare: 0.04, HostStealSeries: steal}
		return p
	}
	for _, tc := range []struct {
		name string
		p    *result.Probe
		want string
	}{
		{"a burst in the 10 s before the breakdown", probe(40, 31, 40), "it broke down in measured second 40, after the machine lost 13 % of its CPU to other guests (steal) in the 15 s before"},
		{"the burst after the breakdown", probe(40, 41, 50), ""},
		{"no breakdown", probe(-1, 31, 40), ""},
	} {
		line := Bottleneck(tc.p.Observation, tc.p)
		if !strings.HasPrefix(line, "lock contention") {
			t.Errorf("%s: %q does not start with the lock line", tc.name, line)
		}
		if got := strings.Contains(line, "broke down"); got != (tc.want != "") || (tc.want != "" && !strings.Contains(line, tc.want)) {
			t.Errorf("%s: %q; want %q", tc.name, line, tc.want)
		}
	}
}
