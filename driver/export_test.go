package driver

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/pgceiling/pgceiling/result"
	"github.com/pgceiling/pgceiling/workload"
)

// Prober runs probes of one workload at the rates a search asks for, all with the same
// pool and settings, so that probes differ only in their rate (the tests' search.Prober).
type Prober struct {
	Pool     *pgxpool.Pool
	Workload workload.Workload
	Config   Config // Rate is ignored: each Probe sets it
	// Before, if set, runs before every probe (reset the data, CHECKPOINT) so probes
	// start from the same state; an error there fails the probe.
	Before func(ctx context.Context) error
}

// Probe runs one probe at rate. Interrupted probes return their partial result.
func (p *Prober) Probe(ctx context.Context, rate float64) (*result.Probe, error) {
	if p.Before != nil {
		if err := p.Before(ctx); err != nil {
			return nil, fmt.Errorf("before the probe at %g/s: %w", rate, err)
		}
	}
	cfg := p.Config
	cfg.Rate = rate
	return Run(ctx, p.Pool, p.Workload, cfg)
}
