package responder

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pgceiling/pgceiling/driver"
	"github.com/pgceiling/pgceiling/result"
	"github.com/pgceiling/pgceiling/schema"
	"github.com/pgceiling/pgceiling/workload"
)

// TestRoundTripsPerTransaction counts, at the server, the round trips each workload's
// transaction costs under each engine (one ReadyForQuery per simple Query or Sync):
// BEGIN travels with SET LOCAL, insert is one autocommit statement whatever its batch.
// The probe's own queries on the pool (the server brief, the balance snapshots, pgx's
// prepares, insert's session SET on each connection) are a few dozen, so over a few
// hundred transactions they add less than half a round trip to the average.
func TestRoundTripsPerTransaction(t *testing.T) {
	s := start(t)
	ctx := context.Background()
	books, err := driver.NewPool(ctx, s.DSN(), driver.Session{AppName: "books"}, 2, pgx.QueryExecModeCacheStatement)
	if err != nil {
		t.Fatalf("driver.NewPool: %v", err)
	}
	defer books.Close()
	const oltpTrips = 1 + 4 + 1 // BEGIN with SET LOCAL, the four statements, COMMIT
	for _, engine := range []result.Engine{driver.EngineLoop, driver.EnginePGX} {
		for _, tc := range []struct {
			name     string
			batch    int
			want     int // BEGIN with SET LOCAL, the statements, COMMIT
			wantRows int64
		}{
			{"oltp", 1, oltpTrips, 1},
			{"transfer", 1, 1 + 6 + 1, 1},
			{"insert", 1, 1, 1},
			{"insert", 50, 1, 50},
			// bench/pgbench/oltp.sql through --script: the built-in oltp's round trips
			// (its \startpipeline'd BEGIN and SET LOCAL are one, as pgceiling sends them).
			{workload.CustomName, 1, oltpTrips, 1},
		} {
			app := "rt-" + string(engine) + "-" + tc.name
			t.Run(app[3:]+"-batch"+strconv.Itoa(tc.batch), func(t *testing.T) {
				pool, err := driver.NewPool(ctx, s.DSN(), driver.Session{AppName: app}, 12, pgx.QueryExecModeCacheStatement)
				if err != nil {
					t.Fatalf("driver.NewPool: %v", err)
				}
				defer pool.Close()
				var w workload.Workload
				if tc.name == workload.CustomName {
					w = describedScript(t, s.DSN(), "../../bench/pgbench/oltp.sql")
				} else if w, err = workload.New(tc.name, workload.Params{Wallets: 10_000, Zipf: 1, SyncCommit: true, Batch: tc.batch}); err != nil {
					t.Fatal(err)
				}
				inserted := s.Committed(Transactions)
				b, err := schema.TakeBaseline(ctx, books)
				if err != nil {
					t.Fatal(err)
				}
				before := s.RoundTrips(app)
				// The loop keeps its P while it waits in epoll and lets the responder in this
				// process run only when it yields (at most every 10 ms): a low rate over
				// many connections keeps that from rejecting arrivals.
				p, err := driver.Run(ctx, pool, w, driver.Config{Rate: 120, Duration: 1500 * time.Millisecond, Conns: 12,
					Engine: engine, Seed: 1, CountRows: schema.Counter(books, b)})
				if err != nil {
					t.Fatalf("driver.Run: %v", err)
				}
				n := p.Checks.CommittedTotal
				if n < 100 || p.Committed != p.Scheduled || len(p.Checks.Problems) > 0 || p.Engine != engine {
					t.Fatalf("probe: engine %s, scheduled %d, committed %d (total %d), failed %v, rejected %d, problems %v",
						p.Engine, p.Scheduled, p.Committed, n, p.Failed, p.Rejected, p.Checks.Problems)
				}
				if tc.name == workload.CustomName { // no row check for a script: the responder's own count
					if got := s.Committed(Transactions) - inserted; got != n {
						t.Errorf("rows: %d payments committed for %d script transactions, want one each", got, n)
					}
				} else if p.Checks.RowDelta != n*tc.wantRows || max(p.RowsPerTx, 1) != int(tc.wantRows) {
					t.Errorf("rows: %d gained for %d transactions, rows_per_tx %d; want %d each", p.Checks.RowDelta, n, p.RowsPerTx, tc.wantRows)
				}
				per := float64(s.RoundTrips(app)-before) / float64(n)
				if per < float64(tc.want) || per >= float64(tc.want)+0.5 {
					t.Errorf("%.2f round trips per transaction over %d transactions, want %d", per, n, tc.want)
				}
				t.Logf("%.2f round trips per transaction over %d transactions", per, n)
			})
		}
	}
}
