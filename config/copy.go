package config

import (
	"slices"
	"time"

	"github.com/spf13/pflag"

	"github.com/pgceiling/pgceiling/result"
)

// Copy is the copy workload's batching: a batch of rows closes at Batch rows or when its
// oldest row has waited Wait, whichever comes first (docs/ingest.md).
type Copy struct {
	Batch int           // --copy-batch
	Wait  time.Duration // --copy-wait; 0 = none: a batch of what arrived starts whenever a connection is free
}

// MaxCopyBatch is the largest --copy-batch: past it a value is a typo, and a batch's rows
// are held in memory.
const MaxCopyBatch = 100_000

// Bind adds the copy flags to fs.
func (c *Copy) Bind(fs *pflag.FlagSet) {
	fs.IntVar(&c.Batch, "copy-batch", result.DefaultCopyBatch, "copy workload: most rows per COPY batch")
	fs.DurationVar(&c.Wait, "copy-wait", result.DefaultCopyWait, "copy workload: a batch closes when its oldest row has waited this long, if not full before (0 = no wait); must be below --pool-wait")
}

// Check records every problem with the copy flags; poolWait is --pool-wait.
func (c *Copy) Check(pr *Problems) {
	if c.Batch < 1 || c.Batch > MaxCopyBatch {
		pr.Addf("--copy-batch must be between 1 and %d, got %d", MaxCopyBatch, c.Batch)
	}
	if c.Wait < 0 {
		pr.Addf("--copy-wait must be >= 0, got %v", c.Wait)
	}
}

// checkCopyEngine records the problems of a copy workload among workloads: the loop
// engine speaks no COPY, and a --copy-wait at or over the pool wait would let rows
// expire waiting for their batch. Without copy the copy flags are ignored.
func checkCopyEngine(pr *Problems, workloads []string, engine result.Engine, c Copy, poolWait time.Duration) {
	if !slices.Contains(workloads, "copy") {
		return
	}
	if engine == result.EngineLoop {
		pr.Addf("--engine loop cannot run the copy workload (it speaks no COPY sub-protocol): use --engine pgx or auto")
	}
	if c.Wait >= 0 && poolWait > 0 && c.Wait >= poolWait {
		pr.Addf("--copy-wait must be below --pool-wait %v (a row waiting longer for its batch would be rejected), got %v", poolWait, c.Wait)
	}
}
