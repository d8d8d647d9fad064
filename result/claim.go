package result

// Claim is what `pgceiling claim` found: whether the server held a claimed rate for a
// claimed duration, shape by shape. The claim's probes are the file's sweeps (one probe
// each, as a run's); the short searches of --find-knee are in each shape.
type Claim struct {
	RateTxS      float64 `json:"rate_tx_s"` // the claimed rate
	ForS         float64 `json:"for_s"`     // the claimed duration: each probe's measured window
	MaxErrorRate float64 `json:"max_error_rate"`
	P99SLOMs     float64 `json:"p99_slo_ms,omitempty"` // 0: no latency rule
	// Held is true when every shape held the rate.
	Held bool `json:"held"`
	// Sentence sets the bare vendor shape beside the realistic ones, in words.
	Sentence string       `json:"sentence"`
	Shapes   []ClaimShape `json:"shapes"`
}

// ClaimShape is the verdict of one shape (a workload at one synchronous_commit setting).
type ClaimShape struct {
	Workload   string     `json:"workload"`
	SyncCommit SyncCommit `json:"sync_commit"`
	Held       bool       `json:"held"`
	Verdict    Verdict    `json:"verdict"` // the search's verdict of the claim's probe
	Reason     string     `json:"reason,omitempty"`
	AchievedTx float64    `json:"achieved_tx_s"`
	ErrorRate  float64    `json:"error_rate"`
	P99Ms      float64    `json:"p99_ms"`
	Bottleneck string     `json:"bottleneck,omitempty"`
	// Table is the table the shape writes; Indexes the indexes it had.
	Table   string `json:"table"`
	Indexes int    `json:"indexes"`
	// Batch is the rows one statement writes (1: one row per transaction).
	Batch int `json:"batch"`
	// SmallPrint is each setting set beside what such claims usually run with.
	SmallPrint []SmallPrint `json:"small_print"`
	// KneeTxS and Interval are the short search's knee (--find-knee; 0 and nil without).
	KneeTxS  float64   `json:"knee_tx_s,omitempty"`
	Interval *Interval `json:"interval,omitempty"`
	// KneeSweep is the short search itself (nil without --find-knee).
	KneeSweep *Sweep `json:"knee_sweep,omitempty"`
}

// SmallPrint is one setting behind a figure, here and in the usual claim.
type SmallPrint struct {
	Setting string `json:"setting"`
	Here    string `json:"here"`
	Claims  string `json:"claims"` // what such claims usually run with
	Differs bool   `json:"differs"`
}
