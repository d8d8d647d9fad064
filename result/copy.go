package result

import "time"

// The copy workload's batching defaults (--copy-batch, --copy-wait); docs/ingest.md says
// why these.
const (
	DefaultCopyBatch = 1000
	DefaultCopyWait  = 50 * time.Millisecond
)

// CopyBatches is how a copy probe's rows were written: batches of COPY FROM STDIN, each
// closed at MaxRows rows or when its oldest row had waited MaxWaitMs, whichever came
// first. The probe's own counts (Scheduled, Committed, AchievedRate, the latencies) are
// in rows: an arrival of the copy workload is a row.
type CopyBatches struct {
	MaxRows   int     `json:"max_rows"`    // --copy-batch
	MaxWaitMs float64 `json:"max_wait_ms"` // --copy-wait; negative = none
	// Batches counts the committed batches whose COMMIT ended inside the measured window,
	// Rows their rows; BatchRate is Batches per measured second, MeanRows Rows / Batches.
	Batches   int64   `json:"batches"`
	Rows      int64   `json:"rows"`
	BatchRate float64 `json:"batch_rate"`
	MeanRows  float64 `json:"mean_rows"`
	// Every batch that started on a connection, warm-up and drain included, by why it
	// closed: full (ByRows), its oldest row's wait was over (ByWait), or no more rows
	// would come (ByFlush, at the end of the probe). Failed counts those that failed.
	ByRows  int64 `json:"by_rows"`
	ByWait  int64 `json:"by_wait"`
	ByFlush int64 `json:"by_flush"`
	Failed  int64 `json:"failed"`
}

// RateUnit is the unit of a workload's rates, as reports print it: "rows/s" for copy,
// whose arrivals are rows, "tx/s" for every other workload.
func RateUnit(workload string) string {
	if workload == "copy" {
		return "rows/s"
	}
	return "tx/s"
}
