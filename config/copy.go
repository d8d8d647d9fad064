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

// Check records every problem with the copy flags themselves.
func (c *Copy) Check(pr *Problems) {
	if c.Batch < 1 || c.Batch > MaxCopyBatch {
		pr.Addf("--copy-batch must be between 1 and %d, got %d", MaxCopyBatch, c.Batch)
	}
	if c.Wait < 0 {
		pr.Addf("--copy-wait must be >= 0 (0 = no wait), got %v", c.Wait)
	}
}

// checkCopy records the problems of a probe p that runs the copy workload (one of
// workloads): the loop engine speaks no COPY, and a row waiting for its batch as long as
// the pool wait would be rejected. Other workloads ignore the copy flags.
func checkCopy(pr *Problems, workloads []string, p *Probe) {
	if !slices.Contains(workloads, "copy") {
		return
	}
	if p.Engine == result.EngineLoop {
		pr.Addf("--engine loop cannot run the copy workload (it speaks no COPY sub-protocol): use --engine pgx or auto")
	}
	if p.PoolWait > 0 && p.Copy.Wait >= p.PoolWait {
		pr.Addf("--copy-wait must be below --pool-wait %v (a row waiting longer for its batch would be rejected), got %v", p.PoolWait, p.Copy.Wait)
	}
}
