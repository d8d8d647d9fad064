package observe

import (
	"context"
	"testing"

	"github.com/pgceiling/pgceiling/internal/pgtest"
)

// BenchmarkSample measures one wait-event sampling round (one pg_stat_activity query),
// the cost the Sampler adds to the server every --sample-interval.
func BenchmarkSample(b *testing.B) {
	s, err := NewSampler(context.Background(), SamplerOptions{DSN: pgtest.NewDatabase(b)})
	if err != nil {
		b.Fatalf("NewSampler: %v", err)
	}
	defer s.Close(context.Background())
	s.counts = map[string]int64{}
	ctx := context.Background()
	for b.Loop() {
		if err := s.sample(ctx); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSnapshot measures reading the cumulative counters (WAL, checkpoints,
// autovacuum, /proc CPU), done at each probe's Start and Stop.
func BenchmarkSnapshot(b *testing.B) {
	s, err := NewSampler(context.Background(), SamplerOptions{DSN: pgtest.NewDatabase(b)})
	if err != nil {
		b.Fatalf("NewSampler: %v", err)
	}
	defer s.Close(context.Background())
	ctx := context.Background()
	for b.Loop() {
		if _, err := s.snapshot(ctx); err != nil {
			b.Fatal(err)
		}
	}
}
