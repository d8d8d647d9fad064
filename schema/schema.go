package schema

import (
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgerrcode"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

//go:embed sql/*.sql
var sqlFiles embed.FS

// Name is the only schema pgceiling creates, writes or drops.
const Name = "pgceiling"

// Format is the version of the schema's layout and of the spec JSON in the marker. A
// schema made with another Format is refused by Check (ErrOtherVersion) and rebuilt by
// Init only with Force.
//
// Format 2: the prefilled history ends HistoryGap (24 h) before init's clock instead of
// at it, so no fraud window reads init's rows (meta records history_end), and
// wallets_baseline keeps updated_at so Restore puts it back too.
const Format = 2

// marker is the value of meta's "marker" key that says the schema is pgceiling's.
const marker = "pgceiling schema: safe for pgceiling init --force and pgceiling drop"

// States of the schema recorded in meta's "state" key.
const (
	StateLoading = "loading" // Init has started and not finished: the next Init rebuilds it
	StateReady   = "ready"
)

// Errors Check returns; the CLI prints them as they are.
var (
	ErrMissing      = errors.New("schema pgceiling not found: run `pgceiling init` first")
	ErrNotOurs      = errors.New("schema pgceiling exists but was not made by pgceiling (no marker in pgceiling.meta): pgceiling will not touch it; use another database or remove it yourself")
	ErrOtherVersion = errors.New("schema pgceiling was made by another pgceiling version (different schema format): rebuild it with `pgceiling init --force`")
	ErrNotReady     = errors.New("schema pgceiling is incomplete (an earlier `pgceiling init` was interrupted): run `pgceiling init` again to rebuild it")
)

// Spec is what Init builds. It is recorded in the marker so a re-run can tell whether the
// schema already is what was asked for.
type Spec struct {
	Wallets int     `json:"wallets"`
	Rows    int64   `json:"rows"`   // prefilled rows of transactions
	Months  int     `json:"months"` // months of history up to now; 3 months ahead and a default partition are always added
	Zipf    float64 `json:"zipf"`   // exponent of the wallet choice; 0 = uniform
	Seed    int64   `json:"seed"`
	// Distribute is DistributeNone (a plain schema) or DistributeCitus (the tables
	// distributed over a Citus cluster by wallet; docs/sharding.md).
	Distribute string `json:"distribute,omitempty"`
}

// DefaultSpec is the production-sized schema: 10,000 wallets, 50 M rows over 12 months,
// Zipf 1.0 — large enough that the indexes outgrow shared_buffers on a real server.
func DefaultSpec() Spec {
	return Spec{Wallets: 10_000, Rows: 50_000_000, Months: 12, Zipf: 1.0, Seed: 1}
}

// MonthsAhead is the number of empty monthly partitions after the current month, so
// probes never write into the default partition.
const MonthsAhead = 3

// Querier is what the read-only functions need: *pgx.Conn, *pgxpool.Pool and pgx.Tx all
// satisfy it.
type Querier interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// Beginner is a Querier that can open a transaction (*pgx.Conn, *pgxpool.Pool).
type Beginner interface {
	Querier
	Begin(ctx context.Context) (pgx.Tx, error)
}

// State is what Status found in the database.
type State struct {
	Exists      bool      // a schema called pgceiling exists
	Marked      bool      // it carries pgceiling's marker
	Spec        Spec      // the spec it was made with (when Marked and readable)
	SpecOK      bool      // Spec could be read in this Format
	Format      int       // the schema format that made it
	ToolVersion string    // the pgceiling version that made it
	CreatedAt   time.Time // when Init began
	State       string    // loading or ready
	Ready       bool      // State == ready
	SameFormat  bool      // Format == this build's Format
	// HistoryEnd is where the prefilled history of transactions ends (HistoryGap before
	// Init's clock); zero for a schema of an older Format.
	HistoryEnd time.Time
}

// notOurMeta reports whether reading pgceiling.meta failed because the table is not
// ours: a table called meta with other columns, or one we may not read. Such a schema
// is not marked.
func notOurMeta(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && (pgErr.Code == pgerrcode.UndefinedColumn || pgErr.Code == pgerrcode.InsufficientPrivilege)
}

// Status inspects the database without changing it.
func Status(ctx context.Context, q Querier) (State, error) {
	var st State
	var metaExists bool
	err := q.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_namespace WHERE nspname = 'pgceiling'),
		to_regclass('pgceiling.meta') IS NOT NULL`).Scan(&st.Exists, &metaExists)
	if err != nil {
		return st, fmt.Errorf("look for schema pgceiling: %w", err)
	}
	if !st.Exists || !metaExists {
		return st, nil
	}
	rows, err := q.Query(ctx, `SELECT key::text, value::text FROM pgceiling.meta`)
	if err != nil {
		if notOurMeta(err) {
			return st, nil
		}
		return st, fmt.Errorf("read pgceiling.meta: %w", err)
	}
	kv, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) ([2]string, error) {
		var p [2]string
		err := r.Scan(&p[0], &p[1])
		return p, err
	})
	if err != nil {
		if notOurMeta(err) {
			return st, nil
		}
		return st, fmt.Errorf("read pgceiling.meta: %w", err)
	}
	m := map[string]string{}
	for _, p := range kv {
		m[p[0]] = p[1]
	}
	if m["marker"] != marker {
		return st, nil
	}
	st.Marked = true
	st.ToolVersion = m["tool_version"]
	st.State = m["state"]
	st.Ready = st.State == StateReady
	fmt.Sscan(m["format"], &st.Format)
	st.SameFormat = st.Format == Format
	st.CreatedAt, _ = time.Parse(time.RFC3339Nano, m["created_at"])
	st.HistoryEnd, _ = time.Parse(time.RFC3339Nano, m["history_end"])
	if st.SameFormat {
		st.SpecOK = json.Unmarshal([]byte(m["spec"]), &st.Spec) == nil
	}
	return st, nil
}

// Check verifies that the schema is pgceiling's, of this format and ready, and returns
// its spec. run and search call it before driving load.
func Check(ctx context.Context, q Querier) (Spec, error) {
	st, err := Status(ctx, q)
	switch {
	case err != nil:
		return Spec{}, err
	case !st.Exists:
		return Spec{}, ErrMissing
	case !st.Marked:
		return Spec{}, ErrNotOurs
	case !st.SameFormat || !st.SpecOK:
		return Spec{}, ErrOtherVersion
	case !st.Ready:
		return Spec{}, ErrNotReady
	}
	return st.Spec, nil
}

// Drop removes schema pgceiling and everything in it, only if it carries the marker.
// The marker is checked and the schema dropped in one transaction, with pgceiling.meta
// locked so no concurrent Init can slip in between. It returns ErrMissing when there is
// no schema and ErrNotOurs when the schema is not marked (then nothing is changed).
func Drop(ctx context.Context, db Beginner) error {
	tx, err := db.Begin(ctx)
	if err != nil {
		return fmt.Errorf("drop: begin: %w", err)
	}
	defer tx.Rollback(ctx)
	if err := dropInTx(ctx, tx); err != nil {
		return err
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("drop: commit: %w", err)
	}
	return nil
}

func dropInTx(ctx context.Context, tx pgx.Tx) error {
	st, err := Status(ctx, tx)
	if err != nil {
		return err
	}
	if !st.Exists {
		return ErrMissing
	}
	if !st.Marked {
		return ErrNotOurs
	}
	if _, err := tx.Exec(ctx, `LOCK TABLE pgceiling.meta IN ACCESS EXCLUSIVE MODE`); err != nil {
		return fmt.Errorf("drop: lock pgceiling.meta: %w", err)
	}
	// Re-read under the lock: the marker must still be there.
	if st, err = Status(ctx, tx); err != nil {
		return err
	}
	if !st.Marked {
		return ErrNotOurs
	}
	if _, err := tx.Exec(ctx, `DROP SCHEMA pgceiling CASCADE`); err != nil {
		return fmt.Errorf("drop schema pgceiling: %w", err)
	}
	return nil
}
