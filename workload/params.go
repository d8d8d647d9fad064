package workload

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pgceiling/pgceiling/result"
)

// Params configures a workload. The driver fills it from the run's configuration; the
// workload never reads flags or the environment.
type Params struct {
	// Wallets is the number of wallets, keys 1..Wallets; it must match the rows of
	// pgceiling.wallets (oltp needs >= 1, transfer >= 2; insert ignores it).
	Wallets int
	// Zipf is the key-skew exponent (--zipf): key k is drawn with probability
	// proportional to 1/k^Zipf, so wallet 1 is the hottest; 0 means uniform.
	Zipf float64
	// SyncCommit is the synchronous_commit each transaction sets with SET LOCAL (the
	// insert workload, in autocommit, sets it once per session): true = on (full
	// durability), false = off.
	SyncCommit bool
	// FraudWindow is how far back oltp's fraud check counts the wallet's transactions.
	// Zero means DefaultFraudWindow; more than MaxFraudWindow is invalid (init's
	// history ends that long before init, so no window ever reaches into it).
	FraudWindow time.Duration
	// FraudLimit makes oltp's fraud check a velocity rule: "more than FraudLimit
	// payments in the window?", counted with LIMIT, so a check reads at most FraudLimit
	// index entries whatever the rate and the probe length. Unlike the other fields,
	// zero is not the default (DefaultParams sets DefaultFraudLimit): zero is the seed's
	// unbounded count, kept for comparison; it has no steady state
	// (WarnUnboundedFraudCheck). Negative is invalid.
	FraudLimit int64
	// PayloadBytes is the size of the insert workload's text payload. Zero means
	// DefaultPayloadBytes.
	PayloadBytes int
	// Batch is the rows of the insert workload's one multi-row INSERT per transaction
	// (--batch), 1..MaxBatch; zero means 1. Other workloads take only 0 or 1.
	Batch int
}

// Defaults used when a Params field is left zero, and by DefaultParams.
//
// DefaultFraudWindow and DefaultFraudLimit together make the fraud check stationary at
// the rates that matter: with 10,000 Zipf-1.0 wallets, wallet k receives rate/(k*H) of
// the payments (H = 9.79), so its expected count over 1 h is rate*3600/(9.79*k); even
// the coldest wallet (k = 10,000) reaches 20 above about 550 tx/s. From there every
// check reads exactly 20 recent index entries whatever the rate and the probe length,
// and below it a wallet's count is its steady-state expectation, which the back-fill
// (schema.Backfill) writes before each probe. A 1 h window also keeps that back-fill
// small: at most limit x wallets = 200,000 rows.
const (
	DefaultWallets      = 10000
	DefaultZipf         = 1.0
	DefaultFraudWindow  = 1 * time.Hour
	DefaultFraudLimit   = 20
	DefaultPayloadBytes = 100
	DefaultBatch        = 1
)

// MaxFraudWindow is the longest fraud window (--fraud-window). Init's prefilled history
// ends this long before init's clock, so the recent history a check reads is always the
// probe's own back-fill, never init's.
const MaxFraudWindow = 24 * time.Hour

// WarnUnboundedFraudCheck is the warning the command prints for FraudLimit == 0.
const WarnUnboundedFraudCheck = "--fraud-limit 0: the fraud check has no steady state; knees will depend on probe length"

// DefaultParams are the documented defaults: 10,000 wallets, Zipf 1.0,
// synchronous_commit on, a 1 h fraud window with a limit of 20, and a 100-byte insert
// payload, one row per insert.
func DefaultParams() Params {
	return Params{
		Wallets:      DefaultWallets,
		Zipf:         DefaultZipf,
		SyncCommit:   true,
		FraudWindow:  DefaultFraudWindow,
		FraudLimit:   DefaultFraudLimit,
		PayloadBytes: DefaultPayloadBytes,
		Batch:        DefaultBatch,
	}
}

// names lists the workloads in the order help and errors show them.
var names = []string{"oltp", "transfer", "insert", "copy"}

// Names returns the valid workload names, for --workload validation and typo
// suggestions.
func Names() []string { return append([]string(nil), names...) }

// New returns the named workload configured by p. An unknown name or an invalid
// parameter is an error naming the problem (and, for a name, listing the valid ones).
func New(name string, p Params) (Workload, error) {
	if p.FraudWindow < 0 || p.FraudWindow > MaxFraudWindow {
		return nil, fmt.Errorf("workload %s: --fraud-window must be between 0 and %v, got %v", name, MaxFraudWindow, p.FraudWindow)
	}
	if p.FraudLimit < 0 {
		return nil, fmt.Errorf("workload %s: --fraud-limit must be >= 0 (0 = unbounded count), got %d", name, p.FraudLimit)
	}
	if p.FraudWindow == 0 {
		p.FraudWindow = DefaultFraudWindow
	}
	if p.PayloadBytes < 0 {
		return nil, fmt.Errorf("workload %s: payload size must be >= 0, got %d", name, p.PayloadBytes)
	}
	if p.PayloadBytes == 0 {
		p.PayloadBytes = DefaultPayloadBytes
	}
	if name != "insert" && p.Batch > 1 {
		return nil, fmt.Errorf("workload %s: --batch is only for the insert workload", name)
	}
	switch name {
	case "oltp":
		return newOLTP(p)
	case "transfer":
		return newTransfer(p)
	case "insert":
		return newInsert(p)
	case "copy":
		return newCopy(p), nil
	}
	return nil, fmt.Errorf("unknown workload %q (valid: %s)", name, strings.Join(names, ", "))
}

// Querier is the smallest thing a check needs to read the database: *pgx.Conn,
// *pgxpool.Pool and pgx.Tx all satisfy it.
type Querier interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// Checker is an optional ability (found by type assertion): a workload that keeps an
// invariant exposes a snapshot of it, taken before and after a probe; the two must be
// equal. transfer's snapshot is the sum of all wallet balances as an exact decimal.
type Checker interface {
	Snapshot(ctx context.Context, q Querier) (string, error)
}

// SkewReporter is an optional ability: a workload that picks keys reports the skew it
// actually produced (counted on every pick, safe for concurrent use), so a result
// shows what "Zipf" meant.
type SkewReporter interface {
	Skew() result.Skew
}

// SkewResetter is an optional ability beside SkewReporter: ResetSkew zeroes the pick
// counts, so one workload value can report each probe's skew separately.
type SkewResetter interface {
	ResetSkew()
}

// CheckReporter is an optional ability: a workload whose transactions read before they
// write (oltp's fraud check) reports what the read counted per transaction since the
// last ResetCheckRead, so a result shows that the read cost the same at the probe's start
// and end. Safe for concurrent use.
type CheckReporter interface {
	CheckRead() *result.CheckRead
	ResetCheckRead()
}

// HistoryReader is an optional ability: a workload whose transactions read a window of
// recent history (oltp's fraud check) says which, so the search can back-fill that
// window before each probe (schema.Backfill) at the probe's rate. limit is the most rows
// one read counts; 0 means unbounded.
type HistoryReader interface {
	RecentHistory() (window time.Duration, limit int64)
}

// formatSeconds renders d as a number of seconds, which PostgreSQL reads as an interval
// ('86400'::interval is 24:00:00), the same text a pgbench variable gives.
func formatSeconds(d time.Duration) string {
	return strconv.FormatFloat(d.Seconds(), 'f', -1, 64)
}
