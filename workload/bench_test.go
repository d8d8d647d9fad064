package workload

import (
	"context"
	"math/rand/v2"
	"testing"

	"github.com/jackc/pgx/v5"
)

// BenchmarkDo runs each workload serially on one connection, reporting allocations per
// transaction (pgx's own included) and the round-trip-bound rate on this machine.
func BenchmarkDo(b *testing.B) {
	dsn := setupSchema(b, 1000)
	for _, name := range Names() {
		b.Run(name, func(b *testing.B) {
			conn := connect(b, dsn, pgx.QueryExecModeCacheStatement)
			w, err := New(name, Params{Wallets: 1000, Zipf: 1, SyncCommit: false})
			if err != nil {
				b.Fatal(err)
			}
			rng := rand.New(rand.NewPCG(1, 2))
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				if err := w.Do(ctx, conn, rng); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
