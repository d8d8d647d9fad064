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
	// SyncCommit is the synchronous_commit each transaction sets with SET LOCAL:
	// true = on (full durability), false = off.
	SyncCommit bool
	// FraudWindow is how far back oltp's fraud check counts the wallet's transactions.
	// Zero means DefaultFraudWindow. It is why the prefilled history matters: the
	// longer the window, the more index entries each check reads.
	FraudWindow time.Duration
	// PayloadBytes is the size of the insert workload's text payload. Zero means
	// DefaultPayloadBytes.
	PayloadBytes int
}

// Defaults used when a Params field is left zero, and by DefaultParams.
const (
	DefaultWallets      = 10000
	DefaultZipf         = 1.0
	DefaultFraudWindow  = 24 * time.Hour
	DefaultPayloadBytes = 100
)

// DefaultParams are the documented defaults: 10,000 wallets, Zipf 1.0,
// synchronous_commit on, a 24 h fraud window and a 100-byte insert payload.
func DefaultParams() Params {
	return Params{
		Wallets:      DefaultWallets,
		Zipf:         DefaultZipf,
		SyncCommit:   true,
		FraudWindow:  DefaultFraudWindow,
		PayloadBytes: DefaultPayloadBytes,
	}
}

// names lists the workloads in the order help and errors show them.
var names = []string{"oltp", "transfer", "insert"}

// Names returns the valid workload names, for --workload validation and typo
// suggestions.
func Names() []string { return append([]string(nil), names...) }

// New returns the named workload configured by p. An unknown name or an invalid
// parameter is an error naming the problem (and, for a name, listing the valid ones).
func New(name string, p Params) (Workload, error) {
	if p.FraudWindow < 0 {
		return nil, fmt.Errorf("workload %s: fraud window must be >= 0, got %v", name, p.FraudWindow)
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
	switch name {
	case "oltp":
		return newOLTP(p)
	case "transfer":
		return newTransfer(p)
	case "insert":
		return newInsert(p), nil
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

// formatSeconds renders d as a number of seconds, which PostgreSQL reads as an interval
// ('86400'::interval is 24:00:00), the same text a pgbench variable gives.
func formatSeconds(d time.Duration) string {
	return strconv.FormatFloat(d.Seconds(), 'f', -1, 64)
}
