package schema

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"slices"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/pgceiling/pgceiling/result"
	"github.com/pgceiling/pgceiling/workload"
)

// MaxUnboundedBackfill is the most rows Backfill writes for an unbounded fraud check
// (Limit 0): that mode has no steady state and is kept for comparison only, and its
// window holds rate x window rows (3.6 M at 1,000 tx/s over 1 h).
const MaxUnboundedBackfill = 2_000_000

// BackfillSpec is the recent history a probe needs: the fraud window (Window, Limit) of
// the workload (workload.HistoryReader) at the probe's offered Rate, over the schema's
// wallets and skew (Wallets, Zipf as in the schema's Spec and the workload's Params).
// Seed makes the rows reproducible.
type BackfillSpec struct {
	Rate    float64       // offered transactions per second
	Window  time.Duration // the fraud check's window, 0 < Window <= workload.MaxFraudWindow
	Limit   int64         // the fraud check's limit; 0 = unbounded
	Wallets int
	Zipf    float64
	Seed    int64
}

// Copier is what Backfill needs: a Querier that can COPY (*pgx.Conn, *pgxpool.Pool).
type Copier interface {
	Querier
	CopyFrom(ctx context.Context, table pgx.Identifier, columns []string, src pgx.CopyFromSource) (int64, error)
}

// Backfill writes, just before a probe, the rows the fraud window holds in the steady
// state of the probe's rate and skew, so the probe's first check reads what its last
// does. Wallet k (Zipf probability p_k) gets m_k = min(Limit, Rate x Window x p_k) rows
// (stochastically rounded, seeded), with created_at spread evenly (one row per m_k-th of
// the window, jittered) over [anchor - Window, anchor), where anchor is the server's
// now() when Backfill starts. The rows are oltp's payments (kind payment, status posted,
// a PAY- reference, oltp's metadata), in created_at order as a live workload writes them,
// streamed with COPY, with ids reserved from transactions_id_seq: above the search's
// baseline, so the next Restore deletes them.
//
// Why min(Limit, .) is exact for the check: a wallet whose expected count Rate x Window
// x p_k is at least Limit starts with Limit rows evenly over the window; during the probe
// they leave the window at Limit/Window per second while its own payments arrive at
// Rate x p_k >= Limit/Window, so its count stays at or above Limit and each of its checks
// reads exactly Limit entries, as in the steady state (which has more rows, but a check
// never reads past the Limit-th). A wallet below the limit starts with its expectation
// and loses rows at Rate x p_k per second while gaining as many: its count stays at its
// steady-state expectation. With the default 1 h window and limit 20 over 10,000 Zipf-1.0
// wallets every wallet is at the limit above about 550 tx/s: 200,000 rows.
//
// The window's last stretch, from anchor to the probe's first arrival (the back-fill's
// own time and whatever the caller does next), holds no rows; the probe's warm-up fills
// it. Limit 0 (the unbounded check) back-fills Rate x Window x p_k rows for every wallet,
// and refuses more than MaxUnboundedBackfill in all.
func Backfill(ctx context.Context, db Copier, s BackfillSpec) (result.Backfill, error) {
	start := time.Now()
	out := result.Backfill{WindowS: s.Window.Seconds(), Rate: s.Rate}
	if err := s.validate(); err != nil {
		return out, err
	}
	keys, err := workload.NewKeys(s.Wallets, s.Zipf)
	if err != nil {
		return out, fmt.Errorf("back-fill: %w", err)
	}
	rng := rand.New(rand.NewPCG(uint64(s.Seed), 0xbac4f111))
	counts := backfillCounts(keys, s.Rate*s.Window.Seconds(), s.Limit, rng)
	var total int64
	for _, m := range counts {
		total += m
	}
	if s.Limit == 0 && total > MaxUnboundedBackfill {
		return out, fmt.Errorf("back-fill: the unbounded fraud check's window at %.0f tx/s over %v holds %d rows, more than %d: the unbounded mode (--fraud-limit 0) is for comparison at low rates or short windows only",
			s.Rate, s.Window, total, MaxUnboundedBackfill)
	}
	if err := db.QueryRow(ctx, `SELECT now()`).Scan(&out.Anchor); err != nil {
		return out, fmt.Errorf("back-fill: read the server's clock: %w", err)
	}
	if total == 0 {
		out.Seconds = time.Since(start).Seconds()
		return out, nil
	}
	// When each row falls: wallet k's m rows one per m-th of the window, jittered, then
	// all of them in time order.
	rows := make([]backfillRow, 0, total)
	w := s.Window.Nanoseconds()
	for k, m := range counts {
		for j := int64(0); j < m; j++ {
			at := min(int64((float64(j)+rng.Float64())/float64(m)*float64(w)), w-1)
			rows = append(rows, backfillRow{at: at, wallet: int32(k + 1), rank: int32(j)})
		}
	}
	slices.SortFunc(rows, func(a, b backfillRow) int { return cmp.Compare(a.at, b.at) })
	var last int64
	err = db.QueryRow(ctx, `SELECT setval('pgceiling.transactions_id_seq', nextval('pgceiling.transactions_id_seq') + $1 - 1)`, total).Scan(&last)
	if err != nil {
		return out, fmt.Errorf("back-fill: reserve %d ids: %w", total, err)
	}
	src := &backfillSource{rows: rows, firstID: last - total + 1, from: out.Anchor.Add(-s.Window),
		limit: s.Limit, rng: rng, cents: new(big.Int), i: -1}
	n, err := db.CopyFrom(ctx, pgx.Identifier{Name, "transactions"}, txColumns, src)
	if err != nil {
		return out, fmt.Errorf("back-fill: copy %d rows into transactions: %w", total, err)
	}
	out.Rows = n
	a := time.Now()
	if err := analyzeSince(ctx, db, src.from); err != nil {
		return out, err
	}
	out.AnalyzeS = time.Since(a).Seconds()
	out.Seconds = time.Since(start).Seconds()
	return out, nil
}

// analyzeSince VACUUMs and ANALYZEs the leaf partitions of transactions that hold rows
// from since on, the ones a back-fill writes, so every probe starts from the state
// autovacuum would otherwise reach at a moment of its own choosing during some probe:
// statistics of the data the probe starts with (its statements are planned from them) and
// the back-filled rows marked all-visible (the fraud check's index-only scan then reads
// no heap page for them). Measured on one server, the check took 0.12-0.2 ms per execution
// from a probe's start until autovacuum processed the partition mid-probe, and 0.06 ms
// after: a probe's cost depended on whether autovacuum came early or late in it.
func analyzeSince(ctx context.Context, q Querier, since time.Time) error {
	leaves, err := recentLeaves(ctx, q, since)
	if err != nil {
		return err
	}
	for _, l := range leaves {
		if _, err := q.Exec(ctx, "VACUUM (ANALYZE) "+pgx.Identifier{Name, l}.Sanitize()); err != nil {
			return fmt.Errorf("back-fill: vacuum analyze %s.%s: %w", Name, l, err)
		}
	}
	return nil
}

func (s BackfillSpec) validate() error {
	switch {
	case !(s.Rate >= 0) || math.IsInf(s.Rate, 0):
		return fmt.Errorf("back-fill: rate must be >= 0, got %v", s.Rate)
	case s.Window <= 0 || s.Window > workload.MaxFraudWindow:
		return fmt.Errorf("back-fill: window must be in (0, %v], got %v", workload.MaxFraudWindow, s.Window)
	case s.Limit < 0:
		return fmt.Errorf("back-fill: limit must be >= 0, got %d", s.Limit)
	case s.Wallets < 1:
		return errors.New("back-fill: need at least 1 wallet")
	}
	return nil
}

// backfillCounts is m_k for every wallet (index k-1): min(limit, perWindow x p_k),
// rounded up with probability equal to its fraction, so the expectation is exact.
func backfillCounts(keys *workload.Keys, perWindow float64, limit int64, rng *rand.Rand) []int64 {
	counts := make([]int64, keys.N())
	for k := 1; k <= keys.N(); k++ {
		x := perWindow * (keys.Share(k) - keys.Share(k-1))
		if limit > 0 {
			x = min(x, float64(limit))
		}
		m := math.Floor(x)
		if rng.Float64() < x-m {
			m++
		}
		counts[k-1] = int64(m)
	}
	return counts
}

// backfillRow is one back-filled payment: its time after the window's start, its wallet,
// and how many of the wallet's back-filled rows come before it.
type backfillRow struct {
	at     int64 // nanoseconds after anchor - window
	wallet int32
	rank   int32
}

// backfillSource streams the rows to pgx's CopyFrom, drawing each row's payment details
// as it goes; the values slice and the amount's big.Int are reused.
type backfillSource struct {
	rows    []backfillRow
	i       int
	firstID int64
	from    time.Time
	limit   int64
	rng     *rand.Rand
	cents   *big.Int
	vals    []any
	ref     []byte
	meta    []byte
}

func (b *backfillSource) Next() bool {
	b.i++
	return b.i < len(b.rows)
}

// Values is one row shaped like oltp's INSERT: a card payment to a uniform merchant,
// amount 0.01..1000.00, a PAY-<hex> reference, metadata {channel, merchant, recent,
// risk} where recent is what the wallet's fraud check would have counted.
func (b *backfillSource) Values() ([]any, error) {
	r := b.rows[b.i]
	rng := b.rng
	merchant := rng.Int64N(1_000_000) + 1
	b.cents.SetInt64(rng.Int64N(100_000) + 1)
	b.ref = append(b.ref[:0], "PAY-"...)
	b.ref = strconv.AppendInt(b.ref, rng.Int64N(1_000_000_000_000)+1, 16)
	recent := int64(r.rank)
	if b.limit > 0 {
		recent = min(recent, b.limit)
	}
	m := append(b.meta[:0], `{"risk": `...)
	m = strconv.AppendInt(m, int64(rng.IntN(100)), 10)
	m = append(m, `, "recent": `...)
	m = strconv.AppendInt(m, recent, 10)
	m = append(m, `, "channel": "card", "merchant": `...)
	m = strconv.AppendInt(m, merchant, 10)
	m = append(m, '}')
	b.meta = m
	at := b.from.Add(time.Duration(r.at))
	b.vals = append(b.vals[:0], b.firstID+int64(b.i), int64(r.wallet), merchant,
		pgtype.Numeric{Int: b.cents, Exp: -2, Valid: true}, "EUR", "payment", "posted",
		string(b.ref), "card payment", string(b.meta), at, at)
	return b.vals, nil
}

func (b *backfillSource) Err() error { return nil }
