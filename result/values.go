package result

import "time"

// SyncCommit is a synchronous_commit setting a probe runs its transactions with (SET
// LOCAL): on or off.
type SyncCommit string

// The synchronous_commit settings pgceiling sweeps.
const (
	SyncOn  SyncCommit = "on"
	SyncOff SyncCommit = "off"
)

// SyncCommits are the settings in the order a search sweeps them by default.
var SyncCommits = []SyncCommit{SyncOn, SyncOff}

// On reports whether the setting is on (each transaction waits for its WAL flush).
func (s SyncCommit) On() bool { return s == SyncOn }

// Engine is how the driver drives its connections.
type Engine string

// The engines: auto picks loop when it can run, else pgx.
const (
	EngineAuto Engine = "auto"
	EngineLoop Engine = "loop"
	EnginePGX  Engine = "pgx"
)

// Engines are the values --engine takes.
var Engines = []Engine{EngineAuto, EngineLoop, EnginePGX}

// Verdict is what the search made of a probe (Probe.Verdict).
type Verdict string

// Verdicts a search gives a probe.
const (
	Pass          Verdict = "pass"
	Fail          Verdict = "fail"
	NotSteady     Verdict = "not_steady"
	DriverLimited Verdict = "driver_limited"
	Fault         Verdict = "fault"
	// HostSteal is a probe that failed (or was not steady) while the hypervisor gave at
	// least StealLimit of the client machine's CPU to other guests, or at least
	// StealOnsetLimit in the StealLeadS seconds before it broke down: it measured the
	// neighbours, so it is neither pass nor fail, and is repeated.
	HostSteal Verdict = "host_steal"
)

// Verdicts are every verdict a probe can have (the results file's schema lists them).
var Verdicts = []Verdict{Pass, Fail, NotSteady, DriverLimited, Fault, HostSteal}

// StealLimit is the share of the machine's CPU time taken by its hypervisor for other
// guests (steal, /proc/stat) from which a probe's failure is not booked against the
// server (HostSteal), and the bottleneck line says so.
const StealLimit = 0.10

// StealOnsetLimit and StealLeadS: a probe whose failure began (its first measured second
// with a failed or rejected arrival, else the second it was cut short) after the
// hypervisor took at least StealOnsetLimit of the machine's CPU on average over the
// StealLeadS seconds up to and including that second is not booked against the server
// either (HostSteal), however little steal the whole probe saw. A probe within one 5 %
// precision step of the knee breaks down when its server loses 5 % of its CPU, and a
// neighbour's burst of 10-20 s is a small share of a 5-minute probe (docs/figures.md,
// "Steal at the breakdown").
const (
	StealOnsetLimit = 0.05
	StealLeadS      = 15
)

// SweepKey names one sweep: a workload under one synchronous_commit setting.
type SweepKey struct {
	Workload   string
	SyncCommit SyncCommit
}

// Key is the sweep's workload and setting.
func (s *Sweep) Key() SweepKey { return SweepKey{Workload: s.Workload, SyncCommit: s.SyncCommit} }

// Sweep returns the sweep of f named k, or nil.
func (f *File) Sweep(k SweepKey) *Sweep {
	for i := range f.Sweeps {
		if f.Sweeps[i].Key() == k {
			return &f.Sweeps[i]
		}
	}
	return nil
}

// The method's defaults (DESIGN.md), defined once: config's flags offer them, the driver
// takes them for zero values and the search judges against them. They live in the lowest
// floor so that every package can name the same value.
const (
	// DefaultConns is the pool's size, the application's connections.
	DefaultConns = 50
	// DefaultPoolWait is how long an arrival may wait for a connection past its intended
	// start before it is rejected (pool_timeout).
	DefaultPoolWait = time.Second
	// DefaultMaxTries is one attempt per arrival: no hidden retries.
	DefaultMaxTries = 1
	// DefaultWarmup and DefaultDuration are a probe's unmeasured warm-up and measured
	// window (7 min: a full checkpoint cycle).
	DefaultWarmup   = 30 * time.Second
	DefaultDuration = 7 * time.Minute
	// The session settings of every driver connection.
	DefaultStatementTimeout = 5 * time.Second
	DefaultLockTimeout      = time.Second
	DefaultIdleInTxTimeout  = 10 * time.Second
	DefaultAppName          = "pgceiling"
)
