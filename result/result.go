// Package result defines what pgceiling measures and writes: a probe's outcome, what the
// server did during it, the server's disclosure, a sweep's knee, and the versioned results
// file. It is plain data shared by driver, observe, search and report, so each can be
// built and tested alone; it imports nothing of the project.
package result

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"time"
)

// ToolVersion is pgceiling's version, written into every results file and schema marker.
const ToolVersion = "0.1.0"

// FormatVersion is the results file's schema version. Readers refuse other versions.
const FormatVersion = 1

// Class is an outcome class of a failed or rejected arrival.
type Class int

// The failure classes. Order is fixed: counters are arrays indexed by Class.
const (
	StatementTimeout   Class = iota // 57014
	LockTimeout                     // 55P03
	Deadlock                        // 40P01
	Serialization                   // 40001
	IdleInTxTimeout                 // 25P03
	Connection                      // 08xxx, 57P01-57P03, network errors
	TooManyConnections              // 53300
	Other                           // anything else
	PoolTimeout                     // client side: not started within --pool-wait
	NumClasses
)

var classNames = [NumClasses]string{"statement_timeout", "lock_timeout", "deadlock",
	"serialization", "idle_in_tx_timeout", "connection", "too_many_connections", "other",
	"pool_timeout"}

func (c Class) String() string {
	if c >= 0 && c < NumClasses {
		return classNames[c]
	}
	return fmt.Sprintf("class(%d)", int(c))
}

// ClassByName returns the class with the given name.
func ClassByName(name string) (Class, bool) {
	for i, n := range classNames {
		if n == name {
			return Class(i), true
		}
	}
	return 0, false
}

// Counts holds one counter per class. In JSON it is an object keyed by class name, with
// zero counters left out.
type Counts [NumClasses]int64

// Total sums all classes.
func (c Counts) Total() int64 {
	var t int64
	for _, v := range c {
		t += v
	}
	return t
}

// MarshalJSON writes the non-zero counters keyed by class name.
func (c Counts) MarshalJSON() ([]byte, error) {
	m := make(map[string]int64)
	for i, v := range c {
		if v != 0 {
			m[classNames[i]] = v
		}
	}
	return json.Marshal(m)
}

// UnmarshalJSON reads counters keyed by class name; an unknown name is an error.
func (c *Counts) UnmarshalJSON(b []byte) error {
	var m map[string]int64
	if err := json.Unmarshal(b, &m); err != nil {
		return err
	}
	*c = Counts{}
	for k, v := range m {
		cl, ok := ClassByName(k)
		if !ok {
			return fmt.Errorf("unknown error class %q", k)
		}
		c[cl] = v
	}
	return nil
}

// Latency summarises one HDR histogram, in milliseconds.
type Latency struct {
	Count int64   `json:"count"`
	P50   float64 `json:"p50"`
	P90   float64 `json:"p90"`
	P99   float64 `json:"p99"`
	P999  float64 `json:"p999"`
	Max   float64 `json:"max"`
	Mean  float64 `json:"mean"`
}

// Phase names a part of a probe.
const (
	PhaseWarmup  = "warmup"
	PhaseMeasure = "measure"
	PhaseDrain   = "drain"
)

// Second is one second of a probe's per-second series, by intended arrival time.
type Second struct {
	T              int     `json:"t"`     // seconds since the probe's start (warm-up included)
	Phase          string  `json:"phase"` // warmup, measure or drain
	Offered        int64   `json:"offered"`
	Committed      int64   `json:"committed"`
	Failed         Counts  `json:"failed"` // by class, pool_timeout included
	P50Ms          float64 `json:"p50_ms"`
	P99Ms          float64 `json:"p99_ms"`
	QueueWaitP99Ms float64 `json:"queue_wait_p99_ms"`
	QueueDepth     int     `json:"queue_depth"`  // the most arrivals waiting at once
	SchedLagMs     float64 `json:"sched_lag_ms"` // the worst lag of the scheduler behind intended times (the second's maximum)
	// SchedLagP99Ms is the second's p99 of the scheduler's lag: what the steady-state rule
	// reads, since one preempted wake-up on a shared machine makes the maximum jump.
	SchedLagP99Ms float64 `json:"sched_lag_p99_ms"`
}

// Checks compares the driver's books with what the database gained.
type Checks struct {
	Table          string `json:"table"`
	RowsBefore     int64  `json:"rows_before"`
	RowsAfter      int64  `json:"rows_after"`
	RowDelta       int64  `json:"row_delta"`
	CommittedTotal int64  `json:"committed_total"` // warm-up, measure and drain
	RowsOK         bool   `json:"rows_ok"`
	// Uncertain counts transactions the driver cancelled mid-flight at the end of the
	// drain: their COMMIT may or may not have reached the server, so the row delta may
	// exceed CommittedTotal by at most this many.
	Uncertain     int64    `json:"uncertain,omitempty"`
	BalanceBefore string   `json:"balance_before,omitempty"`
	BalanceAfter  string   `json:"balance_after,omitempty"`
	BalanceOK     *bool    `json:"balance_ok,omitempty"`
	Problems      []string `json:"problems,omitempty"`
}

// Skew records the key skew actually produced, so users see what "Zipf" meant.
type Skew struct {
	Exponent     float64 `json:"exponent"` // 0 = uniform
	Keys         int     `json:"keys"`
	Picks        int64   `json:"picks"`
	HottestShare float64 `json:"hottest_share"`
	Top1PctShare float64 `json:"top1pct_share"`
}

// ServerBrief is the part of the server's settings every probe carries.
type ServerBrief struct {
	Version           string `json:"version"`
	Fsync             string `json:"fsync"`
	SynchronousCommit string `json:"synchronous_commit"`
}

// Probe is one probe: a fixed offered rate for a warm-up and a measured window.
type Probe struct {
	Workload   string     `json:"workload"`
	SyncCommit SyncCommit `json:"sync_commit"`
	TargetRate float64    `json:"target_rate"`
	Seed       int64      `json:"seed"`
	Conns      int        `json:"conns"`
	PoolWaitMs float64    `json:"pool_wait_ms"`
	StartedAt  time.Time  `json:"started_at"`
	WarmupS    float64    `json:"warmup_s"`
	// RampS is the warm-up's ramp: the offered rate rose linearly from 0 to target_rate
	// over its first ramp_s seconds (absent: none, as in files before 2026-12-05).
	RampS       float64 `json:"ramp_s,omitempty"`
	DurationS   float64 `json:"duration_s"`    // the measured window asked for
	MeasuredS   float64 `json:"measured_s"`    // the measured window actually run (shorter when cut)
	RowsAtStart int64   `json:"rows_at_start"` // rows in the workload's table when the probe began
	// RowsPerTx is the rows each committed transaction adds to checks.table (insert
	// --batch N: N; rows/s = achieved_rate x RowsPerTx); absent means 1.
	RowsPerTx int `json:"rows_per_tx,omitempty"`

	// Books for arrivals whose intended time falls in the measured window:
	// Scheduled == Committed + Failed.Total() + Rejected.
	Scheduled int64  `json:"scheduled"`
	Committed int64  `json:"committed"`
	Failed    Counts `json:"failed"`   // SQL and connection failures by class (no pool_timeout)
	Rejected  int64  `json:"rejected"` // pool_timeout
	Retries   int64  `json:"retries"`  // retry attempts of the measured window's arrivals
	// CommittedInWindow counts the commits that ended inside the measured window, whatever
	// the arrival's intended time: the server's throughput during the window.
	CommittedInWindow int64 `json:"committed_in_window"`
	// DrainCommitted counts the measured window's arrivals that committed after the window
	// closed (in the drain): part of Committed, not of CommittedInWindow.
	DrainCommitted int64   `json:"drain_committed"`
	AchievedRate   float64 `json:"achieved_rate"` // CommittedInWindow / MeasuredS

	Latency   Latency `json:"latency_ms"`    // intended start -> commit
	Service   Latency `json:"service_ms"`    // actual start -> commit
	QueueWait Latency `json:"queue_wait_ms"` // intended start -> actual start
	// Late counts the measured window's commits whose latency exceeded the pool wait (to
	// the histograms' 3 significant digits): on time to start, late to finish. They pass
	// pgceiling's error rule; pgbench --latency-limit counts them as late.
	Late int64 `json:"late"`

	Series []Second    `json:"series"`
	Checks Checks      `json:"checks"`
	Skew   Skew        `json:"skew"`
	Server ServerBrief `json:"server"`

	ClientCPUSeconds  float64 `json:"client_cpu_s"`
	DriverThreads     int     `json:"driver_threads,omitempty"` // cores (GOMAXPROCS) the driver had at the probe's end
	Engine            Engine  `json:"engine,omitempty"`         // how the driver drove its connections: loop or pgx
	SchedLagP99Ms     float64 `json:"sched_lag_p99_ms"`         // the scheduler's lag behind intended times, measured window
	DriverLimited     bool    `json:"driver_limited"`
	DriverLimitReason string  `json:"driver_limit_reason,omitempty"`
	Interrupted       bool    `json:"interrupted,omitempty"`
	CutShort          bool    `json:"cut_short,omitempty"` // stopped early: see CutBy and CutReason
	CutReason         string  `json:"cut_reason,omitempty"`
	// CutBy says what stopped the probe early: CutByErrors (the error budget), CutByTrend
	// (the steady-state rule decided the queue wait's growth), CutByServer (the server
	// went away or the driver failed).
	CutBy string `json:"cut_by,omitempty"`
	Error string `json:"error,omitempty"` // a probe that could not complete
	// ObserverError says why the server could not be observed (e.g. its connection was
	// lost in a restart); the probe's own figures stand.
	ObserverError string `json:"observer_error,omitempty"`

	Observation *Observation `json:"observation,omitempty"`

	// Loops is how many event loops the loop engine ran (one per core, each on its own
	// thread); LoopBusy is each loop's thread CPU time over its wall time (1 = a core).
	Loops    int       `json:"loops,omitempty"`
	LoopBusy []float64 `json:"loop_busy,omitempty"`
	// LoopsAddedS is when each loop started issuing, in seconds from the probe's start: 0
	// for the loops it started with (all of them with a fixed --threads); with --threads
	// auto, the instants it added the others.
	LoopsAddedS []float64 `json:"loops_added_s,omitempty"`
	// ClientCPUPerTxMs is ClientCPUSeconds over every commit of the probe, warm-up and
	// drain included (the CPU time covers them too), in ms.
	ClientCPUPerTxMs float64 `json:"client_cpu_per_tx_ms,omitempty"`

	// FraudCheck is what oltp's fraud check read (nil for other workloads).
	FraudCheck *CheckRead `json:"fraud_check,omitempty"`
	// Backfill is the recent history written before the probe (nil when none was).
	Backfill *Backfill `json:"backfill,omitempty"`
	// Restore is what putting the data back before the probe cost (nil with --keep-growth
	// and in run).
	Restore *Restore `json:"restore,omitempty"`
	// Steady is the steady-state rule's figures for this probe (nil when not judged).
	Steady *Steady `json:"steady,omitempty"`
	// Copy is how the copy workload's rows were batched (nil for other workloads).
	Copy *CopyBatches `json:"copy,omitempty"`
	// Fleet is how several driver processes (--drivers) made this probe (nil: one did).
	Fleet *Fleet `json:"fleet,omitempty"`

	// Set by the search.
	Verdict Verdict `json:"verdict,omitempty"`
	Reason  string  `json:"reason,omitempty"`
	Retry   bool    `json:"retry,omitempty"` // a repeat of a probe that failed by fault
	// Hold: the search's hold step, a probe of the knee for Sweep.HoldS instead of the
	// probe length; its failure counts its rate as failed.
	Hold bool `json:"hold,omitempty"`
	// Round is the search round (--rounds) that made the probe, from 1; 0 (left out) in a
	// search of one round.
	Round int `json:"round,omitempty"`
}

// What stopped a probe early (Probe.CutBy).
const (
	CutByErrors = "errors"
	CutByTrend  = "trend"
	CutByServer = "server"
)

// CheckRead is what a workload's read-before-write check read per transaction: the rows
// counted by oltp's fraud check, so a reader sees that its cost was the same at the
// start and the end of the probe.
type CheckRead struct {
	Checks  int64   `json:"checks"`   // checks counted (measured window and warm-up)
	WindowS float64 `json:"window_s"` // how far back the check counts
	Limit   int64   `json:"limit"`    // the most rows one check counts; 0 = unbounded
	P50     float64 `json:"rows_p50"`
	P99     float64 `json:"rows_p99"`
	Mean    float64 `json:"rows_mean"`
	Max     float64 `json:"rows_max"`
	// FirstP50 and LastP50 are the median rows per check in the first and the last third
	// of the probe: equal for a stationary check.
	FirstP50 float64 `json:"rows_p50_first_third"`
	LastP50  float64 `json:"rows_p50_last_third"`
}

// Backfill is the recent history a probe starts with: rows of its own workload written
// just before it, at the probe's offered rate and skew, with created_at over the window
// that ends at the probe's start, so the first measured second reads what the last does.
type Backfill struct {
	Rows    int64     `json:"rows"`
	Seconds float64   `json:"seconds"`  // what writing them took
	WindowS float64   `json:"window_s"` // created_at spans [anchor - window, anchor)
	Anchor  time.Time `json:"anchor"`
	Rate    float64   `json:"rate"` // the offered rate they stand for
	// AnalyzeS is what the VACUUM (ANALYZE) of the partitions written took (included in
	// Seconds): each probe is planned from statistics of the data it starts with, and
	// the back-filled rows are all-visible.
	AnalyzeS float64 `json:"analyze_s,omitempty"`
}

// Restore is the cost of putting the data back to the search's baseline before a probe.
type Restore struct {
	Seconds           float64  `json:"seconds"`
	TransactionsRows  int64    `json:"transactions_deleted"`
	AuditRows         int64    `json:"audit_deleted"`
	EventsRows        int64    `json:"events_deleted"`
	WalletsRestored   int64    `json:"wallets_restored"`
	VacuumedRelations []string `json:"vacuumed"`
	// Reindexed are the tables whose indexes the restore rebuilt (all of them before a
	// command's first probe, then those grown past schema.IndexBloat), and ReindexS what
	// that took (included in Seconds).
	Reindexed []string `json:"reindexed,omitempty"`
	ReindexS  float64  `json:"reindex_s,omitempty"`
}

// Fleet is a probe offered by several driver processes (--drivers N) and merged by the
// leader: each driver's share, its clock against the server's, and who was missing.
type Fleet struct {
	Drivers int `json:"drivers"` // processes planned, the leader included
	// MaxSkewMs is the largest clock offset of a driver against the server's clock.
	MaxSkewMs float64     `json:"max_skew_ms"`
	Parts     []FleetPart `json:"parts"`
	// Missing lists the drivers whose results never arrived (the probe is then a fault).
	Missing []int `json:"missing,omitempty"`
}

// FleetPart is one driver's share of a fleet probe.
type FleetPart struct {
	Driver       int     `json:"driver"` // 0 is the leader
	Host         string  `json:"host,omitempty"`
	SkewMs       float64 `json:"skew_ms"`       // the server's clock minus the driver's
	RTTMs        float64 `json:"rtt_ms"`        // the round trip of the skew's best sample (the skew is known to half of it)
	LateMs       float64 `json:"late_ms"`       // how late its probe started after the planned instant
	TargetRate   float64 `json:"target_rate"`   // its share of the offered rate
	AchievedRate float64 `json:"achieved_rate"` // its commits in its measured window, per second
	Scheduled    int64   `json:"scheduled"`
	Committed    int64   `json:"committed"`
	Failed       int64   `json:"failed"` // failed and rejected
	ClientCPUS   float64 `json:"client_cpu_s"`
	Engine       Engine  `json:"engine,omitempty"`
	CutReason    string  `json:"cut_reason,omitempty"`
	Error        string  `json:"error,omitempty"`
}

// Steady is the steady-state rule's reading of a probe's per-second series: the trend of
// the per-second queue wait p99 (Theil-Sen slope with its confidence interval) and where
// it would be after another probe length, against the limit it must stay under.
type Steady struct {
	Series      string  `json:"series"`  // the series that decided: queue_wait_p99 or latency_p99
	Seconds     int     `json:"seconds"` // measured seconds judged
	LevelMs     float64 `json:"level_ms"`
	SlopeMsPerS float64 `json:"slope_ms_per_s"`
	SlopeLo     float64 `json:"slope_lo_ms_per_s"` // confidence interval of the slope
	SlopeHi     float64 `json:"slope_hi_ms_per_s"`
	Confidence  float64 `json:"confidence"`
	ProjectedMs float64 `json:"projected_ms"` // at the end of another probe length, from SlopeLo
	LimitMs     float64 `json:"limit_ms"`
	Verdict     string  `json:"verdict"` // steady, growing, or too_short
}

// FailedAndRejected is every arrival in the window that did not commit.
func (p *Probe) FailedAndRejected() int64 { return p.Failed.Total() + p.Rejected }

// ErrorRate is (failed + rejected) / scheduled, 0 when nothing was scheduled.
func (p *Probe) ErrorRate() float64 {
	if p.Scheduled == 0 {
		return 0
	}
	return float64(p.FailedAndRejected()) / float64(p.Scheduled)
}

// Balanced reports whether the accounting invariant holds.
func (p *Probe) Balanced() bool {
	return p.Scheduled == p.Committed+p.Failed.Total()+p.Rejected
}

// WaitShare is one wait event's share of the active samples.
type WaitShare struct {
	Event   string  `json:"event"` // wait_event_type:wait_event, or "CPU"
	Samples int64   `json:"samples"`
	Share   float64 `json:"share"`
}

// WAL is the pg_stat_wal delta over a probe.
type WAL struct {
	Records    int64   `json:"records"`
	FPI        int64   `json:"fpi"`
	Bytes      int64   `json:"bytes"`
	Writes     int64   `json:"writes"`
	Syncs      int64   `json:"syncs"`
	WriteMs    float64 `json:"write_ms"`
	SyncMs     float64 `json:"sync_ms"`
	BytesPerTx float64 `json:"bytes_per_tx"`
	SyncsPerTx float64 `json:"syncs_per_tx"`
}

// MsPerSync is the mean time of one WAL sync over the probe, in ms: the storage's flush
// time as the server saw it. 0 without syncs or without their times (track_wal_io_timing
// off).
func (w WAL) MsPerSync() float64 {
	if w.Syncs <= 0 || w.SyncMs <= 0 {
		return 0
	}
	return w.SyncMs / float64(w.Syncs)
}

// WaitShift is one wait event's share of the active samples early and late in a probe.
type WaitShift struct {
	Event      string  `json:"event"`
	FirstShare float64 `json:"first_share"` // first third of the window
	LastShare  float64 `json:"last_share"`  // last third
}

// Observation is what the server did during a probe.
type Observation struct {
	SampleIntervalMs float64     `json:"sample_interval_ms"`
	Samples          int64       `json:"samples"`         // active backend samples
	Ticks            int64       `json:"ticks,omitempty"` // sampling rounds; Samples/Ticks = backends active on average
	Waits            []WaitShare `json:"waits"`
	WAL              WAL         `json:"wal"`
	Checkpoints      int64       `json:"checkpoints"`
	BuffersBackend   int64       `json:"buffers_backend"`
	Autovacuums      int64       `json:"autovacuums"`
	// WaitGrowth is the wait event whose share of the active samples grew the most from
	// the first to the last third of the window (nil when none grew): what a growing
	// queue was waiting on.
	WaitGrowth       *WaitShift `json:"wait_growth,omitempty"`
	ServerLocal      bool       `json:"server_local"`
	ServerCPUSeconds float64    `json:"server_cpu_s,omitempty"`
	ServerCPUShare   float64    `json:"server_cpu_share,omitempty"` // of all its cores
	HostCPUShare     float64    `json:"host_cpu_share,omitempty"`   // of the client machine's cores, every process counted (steal not counted)
	// HostStealShare is the share of the client machine's CPU time its hypervisor gave to
	// other guests during the probe (steal): a virtual machine whose neighbours take its
	// CPU measures the neighbours, not the server.
	HostStealShare float64 `json:"host_steal_share,omitempty"`
	// HostStealSeries is the same share second by second from the window's start (its
	// first element is the first measured second): a neighbour's burst of a few seconds,
	// which the probe's average hides, shows here. Left out when /proc/stat cannot be read.
	HostStealSeries  []float64 `json:"host_steal_series,omitempty"`
	ServerCPUPerTxMs float64   `json:"server_cpu_per_tx_ms,omitempty"`
	ClientCPUPerTxMs float64   `json:"client_cpu_per_tx_ms,omitempty"`
	Bottleneck       string    `json:"bottleneck"`
}

// TableSize describes one of pgceiling's tables.
type TableSize struct {
	Name       string `json:"name"`
	Rows       int64  `json:"rows"`
	HeapBytes  int64  `json:"heap_bytes"`
	IndexBytes int64  `json:"index_bytes"`
	Indexes    int    `json:"indexes"`
}

// Disclosure is every setting behind a figure: the server, the schema, the machines.
type Disclosure struct {
	Version             string            `json:"version"`
	Settings            map[string]string `json:"settings"`
	Tables              []TableSize       `json:"tables"`
	DataBytes           int64             `json:"data_bytes"`
	SharedBuffersBytes  int64             `json:"shared_buffers_bytes"`
	DataToSharedBuffers float64           `json:"data_to_shared_buffers"`
	ClientCores         int               `json:"client_cores"`
	ClientMemBytes      int64             `json:"client_mem_bytes"`
	ServerLocal         bool              `json:"server_local"`
	ServerCores         int               `json:"server_cores,omitempty"`
	ServerMemBytes      int64             `json:"server_mem_bytes,omitempty"`
	Embedded            bool              `json:"embedded"`
	Warnings            []string          `json:"warnings,omitempty"`
	// Distribution is how pgceiling's tables are spread over nodes (Citus); nil in files
	// written before it was disclosed.
	Distribution *Distribution `json:"distribution,omitempty"`
}

// Distribution says whether and how pgceiling's tables are sharded: with Citus (`pgceiling
// init --distribute citus`), or not at all. The tables' sizes in Disclosure.Tables are the
// coordinator's own; a distributed table's data lives in its shards, summed here.
type Distribution struct {
	// Citus is the version of the citus extension in the database; empty when it is not
	// installed (then nothing is distributed).
	Citus string `json:"citus,omitempty"`
	// Workers is the number of active worker nodes (the coordinator not counted).
	Workers int `json:"workers"`
	// Nodes is the number of active primary nodes that may hold shards (the coordinator
	// too when it is set to hold shards).
	Nodes int `json:"nodes"`
	// PropagateSetCommands is citus.propagate_set_commands as pgceiling's session sees
	// it: only "local" carries the SET LOCAL synchronous_commit of each transaction on to
	// the workers, so a synchronous_commit=off sweep needs it (docs/sharding.md).
	PropagateSetCommands string `json:"propagate_set_commands,omitempty"`
	// Tables are pgceiling's tables as Citus knows them, distributed or local.
	Tables []DistributedTable `json:"tables,omitempty"`
}

// Distributed reports whether any of pgceiling's tables is a Citus table.
func (d *Distribution) Distributed() bool {
	if d == nil {
		return false
	}
	for _, t := range d.Tables {
		if t.Type != DistLocal {
			return true
		}
	}
	return false
}

// Types of DistributedTable.
const (
	DistHash      = "distributed" // hash-distributed by Column into Shards shards
	DistReference = "reference"   // one shard copied to every node
	DistLocal     = "local"       // an ordinary table on the coordinator
)

// DistributedTable is one of pgceiling's tables under Citus.
type DistributedTable struct {
	Name string `json:"name"`
	Type string `json:"type"` // DistHash, DistReference, DistLocal (or Citus's own method letter)
	// Column is the distribution column (empty unless Type is DistHash).
	Column string `json:"column,omitempty"`
	// ColocationID is Citus's colocation group: tables with the same id keep the rows of one
	// distribution value on the same node, so a transaction touching them for one wallet
	// runs on one node.
	ColocationID int `json:"colocation_id,omitempty"`
	// Shards of the table (of each partition, for a partitioned table).
	Shards int `json:"shards,omitempty"`
	// ShardNodes is the number of nodes holding its shards.
	ShardNodes int `json:"shard_nodes,omitempty"`
	// HeapBytes and IndexBytes are summed over every shard (and partition).
	HeapBytes  int64 `json:"heap_bytes,omitempty"`
	IndexBytes int64 `json:"index_bytes,omitempty"`
}

// Interval is the knee's uncertainty: the rate at which a probe of WindowS seconds passes
// half the time, estimated from every pass and fail of the sweep and how long each ran,
// with a confidence interval.
type Interval struct {
	Lo       float64 `json:"lo"`
	Hi       float64 `json:"hi"`
	Level    float64 `json:"level"`    // e.g. 0.9
	Midpoint float64 `json:"midpoint"` // the estimate of the rate passed half the time
	Method   string  `json:"method"`
	Probes   int     `json:"probes"` // pass/fail verdicts it was fitted on
	// WindowS is the reference window the 50 % refers to: the hold's when the search
	// held, else the probes' measured window. 0 in files from before it was recorded
	// (a logistic fit of pass/fail, without the probes' lengths).
	WindowS float64 `json:"window_s,omitempty"`
	// EventS is the fitted weight of a probe's start and of each checkpoint in it, in
	// seconds of steady running: the collapse chance each brings (0: none beyond the
	// seconds; left out in files from before it was fitted).
	EventS float64 `json:"event_s,omitempty"`
	// RepeatLo and RepeatHi are where a second run of the same search on the same,
	// unchanged server puts its estimate (Midpoint) with the interval's Level: the profile
	// likelihood cut at twice Lo-Hi's threshold, about √2 times as wide, since the
	// difference of two equally precise estimates has twice one's variance (Lo-Hi itself
	// holds the next run's estimate only about 3 times in 4). 0 in files from before it was
	// recorded.
	RepeatLo float64 `json:"repeat_lo,omitempty"`
	RepeatHi float64 `json:"repeat_hi,omitempty"`
}

// Contains says whether rate lies inside the interval, its ends included.
func (iv *Interval) Contains(rate float64) bool { return rate >= iv.Lo && rate <= iv.Hi }

// HasRepeat says whether the interval records where a second run's estimate falls.
func (iv *Interval) HasRepeat() bool { return iv.RepeatHi > 0 && iv.RepeatHi >= iv.RepeatLo }

// RepeatContains says whether rate lies inside the repeat interval (RepeatLo-RepeatHi),
// its ends included; false when it was not recorded.
func (iv *Interval) RepeatContains(rate float64) bool {
	return iv.HasRepeat() && rate >= iv.RepeatLo && rate <= iv.RepeatHi
}

// Overlaps says whether the two intervals share a rate: how two runs of one server are
// read (two correct 90 % intervals overlap about 98 times in 100).
func (iv *Interval) Overlaps(o *Interval) bool { return iv.Lo <= o.Hi && o.Lo <= iv.Hi }

// Bracket is the search's interval: Lo passed, Hi failed (0 when none failed yet).
type Bracket struct {
	Lo float64 `json:"lo"`
	Hi float64 `json:"hi"`
}

// Sweep is one search (or one run) for a workload and synchronous_commit setting.
type Sweep struct {
	Workload     string     `json:"workload"`
	SyncCommit   SyncCommit `json:"sync_commit"`
	Probes       []Probe    `json:"probes"`
	Knee         float64    `json:"knee"` // highest passing rate; 0 when none passed
	Bracket      Bracket    `json:"bracket"`
	Converged    bool       `json:"converged"`
	Stop         string     `json:"stop,omitempty"` // why the search ended
	KeepGrowth   bool       `json:"keep_growth"`
	ProbeMinutes float64    `json:"probe_minutes"` // warm-up included
	// CalibratedRate is the calibration's estimate of the maximum throughput the search
	// started from (0 when it started from a given rate); a resumed search reuses it.
	CalibratedRate float64 `json:"calibrated_rate,omitempty"`
	Bottleneck     string  `json:"bottleneck,omitempty"` // at BottleneckRate
	// BottleneckRate is the probe rate Bottleneck describes: the first failing rate above
	// the knee, else the knee's.
	BottleneckRate float64 `json:"bottleneck_rate,omitempty"`
	// Interval is the knee's confidence interval (nil until there are passes and fails).
	Interval *Interval `json:"interval,omitempty"`
	// Repeats is how many times each final edge of the bracket was probed in all.
	Repeats int `json:"repeats,omitempty"`
	// StartFrom names the results file whose knee started the bracket (--start-from).
	StartFrom string `json:"start_from,omitempty"`
	// HoldS is the hold step's measured window in seconds (--hold; 0: no hold step).
	HoldS float64 `json:"hold_s,omitempty"`
	// Held: the knee passed a hold of HoldS (the search converged with a hold step).
	Held bool `json:"held,omitempty"`
	// Pool is the pool-size scan that chose the sweep's connections (--conns auto); nil
	// when --conns was given.
	Pool *PoolScan `json:"pool,omitempty"`
	// Rounds is how many rounds the sweep ran (--rounds: each round after the first
	// probes the bracket's edges again, minutes later); 0 for a search of one round.
	// RoundKnees is the knee as each round left it (the last is Knee).
	Rounds     int       `json:"rounds,omitempty"`
	RoundKnees []float64 `json:"round_knees,omitempty"`
}

// PoolScan is how a search chose its pool size (--conns auto): short overload probes at
// pool sizes 4, 8, 16, ... and back (each pool twice, 4, 8, 16, 16, 8, 4), each measuring
// the server's saturated throughput with that many connections busy all the time (the
// state a queue puts it in), and the smallest pool within Within of the best by the mean
// of its windows.
type PoolScan struct {
	Points  []PoolPoint `json:"points"`
	Conns   int         `json:"conns"`   // the pool chosen: every probe of the sweep uses it
	Best    int         `json:"best"`    // the pool with the highest saturated throughput
	Within  float64     `json:"within"`  // the smallest pool with at least Within × the best's is chosen
	Seconds float64     `json:"seconds"` // warm-up and measured time of the scan's probes
}

// PoolPoint is one pool size of the pool scan: its overload probes (one on the way up,
// one on the way back).
type PoolPoint struct {
	Conns     int     `json:"conns"`
	Rate      float64 `json:"rate"`       // offered, tx/s (above what the server can do)
	Achieved  float64 `json:"achieved"`   // committed tx/s in the windows (their mean): the saturated throughput
	ErrorRate float64 `json:"error_rate"` // (failed + rejected) / scheduled, mean of the windows
	// Windows is each probe's committed tx/s in the order measured; files written before
	// 2026-12-06 have one window per pool and no Windows.
	Windows []float64 `json:"windows,omitempty"`
	// Saturated: every probe was above the server's capacity (errors above 1 % or achieved
	// below 90 % of the rate), so Achieved is the pool's saturated throughput and not a
	// lower bound of it.
	Saturated bool `json:"saturated"`
}

// File is one results file: one per command.
type File struct {
	FormatVersion int    `json:"format_version"`
	Tool          string `json:"tool"`
	ToolVersion   string `json:"tool_version"`
	// RunID names the run in every CSV row and in whatever a pipeline stores: the start
	// time and a short random or content hash (RunIDFor), set by NewFile, and derived by
	// Decode and Write for a file that has none.
	RunID       string            `json:"run_id,omitempty"`
	Command     string            `json:"command"`      // run, search or claim
	CommandLine []string          `json:"command_line"` // passwords redacted
	Config      map[string]string `json:"config"`       // every flag's value, passwords redacted
	StartedAt   time.Time         `json:"started_at"`
	FinishedAt  time.Time         `json:"finished_at"`
	Server      *Disclosure       `json:"server,omitempty"`
	Sweeps      []Sweep           `json:"sweeps"`
	Claim       *Claim            `json:"claim,omitempty"` // claim's verdicts
	Interrupted bool              `json:"interrupted,omitempty"`
	Error       string            `json:"error,omitempty"`
	Warnings    []string          `json:"warnings,omitempty"`
}

// NewFile starts a results file for a command, with a fresh run id.
func NewFile(command string) *File {
	f := &File{FormatVersion: FormatVersion, Tool: "pgceiling", ToolVersion: ToolVersion,
		Command: command, StartedAt: time.Now().UTC(), Config: map[string]string{}}
	var nonce [8]byte
	rand.Read(nonce[:]) // never fails (crypto/rand)
	f.RunID = RunIDFor(f.StartedAt, nonce[:])
	return f
}

// RunIDFor makes a run id from a start time and some bytes that tell runs apart:
// "20261130T090000Z-3f9a1c", the UTC start to the second and 6 hex digits of their hash.
// Ids sort by start time.
func RunIDFor(start time.Time, distinct []byte) string {
	sum := sha256.Sum256(distinct)
	return start.UTC().Format("20060102T150405Z") + "-" + hex.EncodeToString(sum[:3])
}

// EnsureRunID gives f a run id when it has none (a file written before run ids, or built
// without NewFile): derived from what identifies the run in the file itself (its start
// time to the nanosecond, command and command line), so the same file always gets the
// same id.
func (f *File) EnsureRunID() {
	if f.RunID != "" {
		return
	}
	var b []byte
	b = append(b, f.StartedAt.UTC().Format(time.RFC3339Nano)...)
	b = append(b, 0)
	b = append(b, f.Command...)
	for _, a := range f.CommandLine {
		b = append(b, 0)
		b = append(b, a...)
	}
	f.RunID = RunIDFor(f.StartedAt, b)
}
