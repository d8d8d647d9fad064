package config

import (
	"slices"

	"github.com/spf13/pflag"
)

// MaxBatch bounds --batch (workload.MaxBatch holds the same value; config does not import
// workload): two parameters a row stay well inside the protocol's 65,535.
const MaxBatch = 10000

// bindBatch adds --batch to fs.
func bindBatch(fs *pflag.FlagSet, n *int) {
	fs.IntVar(n, "batch", 1, "rows per transaction of the insert workload: one multi-row INSERT of N rows, sent in autocommit (1 to 10000); rows/s = committed tx/s x N")
}

// checkBatch records a problem when --batch is out of range, or above 1 with no insert
// among workloads (it changes nothing else).
func checkBatch(p *Problems, n int, workloads []string) {
	switch {
	case n < 1 || n > MaxBatch:
		p.Addf("--batch must be between 1 and %d rows, got %d", MaxBatch, n)
	case n > 1 && !slices.Contains(workloads, "insert"):
		p.Addf("--batch is only for the insert workload (rows per multi-row INSERT); add --workload insert or drop --batch")
	}
}
