package schema_test

import (
	"context"
	"errors"
	"math"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pgceiling/pgceiling/internal/pgtest"
	"github.com/pgceiling/pgceiling/localpg"
	"github.com/pgceiling/pgceiling/schema"
	"github.com/pgceiling/pgceiling/schema/schematest"
	"github.com/pgceiling/pgceiling/workload"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m, localpg.Options{})) }

// small is a spec the tests can afford: a few seconds on a busy 2-core machine.
func small() schema.Spec {
	return schema.Spec{Wallets: 100, Rows: 20_000, Months: 3, Zipf: 1.0, Seed: 7}
}

func setup(t testing.TB) (*pgx.ConnConfig, *pgx.Conn) {
	t.Helper()
	dsn := pgtest.NewDatabase(t)
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		t.Fatalf("parse test DSN: %v", err)
	}
	conn, err := pgx.ConnectConfig(context.Background(), cfg)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return cfg, conn
}

// mustBaseline takes the schema's baseline on conn, failing the test when it cannot.
func mustBaseline(t testing.TB, conn *pgx.Conn) schema.Baseline {
	t.Helper()
	b, err := schema.TakeBaseline(context.Background(), conn)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func mustInit(t testing.TB, cfg *pgx.ConnConfig, spec schema.Spec, opt schema.InitOptions) *schema.Made {
	t.Helper()
	if opt.Workers == 0 {
		opt.Workers = 2
	}
	made, err := schema.Init(context.Background(), cfg, spec, opt)
	if err != nil {
		t.Fatalf("Init(%s, %+v): %v", spec, opt, err)
	}
	return made
}

func count(t *testing.T, conn *pgx.Conn, sql string, args ...any) int64 {
	t.Helper()
	var n int64
	if err := conn.QueryRow(context.Background(), sql, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return n
}

func TestInitShape(t *testing.T) {
	cfg, conn := setup(t)
	ctx := context.Background()
	spec := small()
	var mu sync.Mutex
	phases := map[string]bool{}
	made := mustInit(t, cfg, spec, schema.InitOptions{Progress: func(p schema.Progress) {
		mu.Lock()
		phases[p.Phase] = true
		mu.Unlock()
	}})
	for _, ph := range []string{schema.PhaseSchema, schema.PhaseLoad, schema.PhaseIndex, schema.PhaseAnalyze, schema.PhaseDone} {
		if !phases[ph] {
			t.Errorf("Init reported phases %v, missing %q", phases, ph)
		}
	}
	if made.AlreadyThere || made.Rebuilt || made.Rows != spec.Rows || made.Partitions != spec.Months+4 {
		t.Errorf("Made = %+v", made)
	}

	// The 12 columns of transactions, with their types.
	rows, _ := conn.Query(ctx, `SELECT column_name || ' ' || data_type FROM information_schema.columns
		WHERE table_schema = 'pgceiling' AND table_name = 'transactions' ORDER BY ordinal_position`)
	cols, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"id bigint", "wallet_id bigint", "counterparty_id bigint", "amount numeric",
		"currency character varying", "kind character varying", "status character varying",
		"reference character varying", "description text", "metadata jsonb",
		"created_at timestamp with time zone", "updated_at timestamp with time zone"}
	if strings.Join(cols, ", ") != strings.Join(want, ", ") {
		t.Errorf("transactions columns:\n got %v\nwant %v", cols, want)
	}

	// Partitions: months of history + 3 ahead + default, contiguous monthly ranges.
	if n := count(t, conn, `SELECT count(*) FROM pg_inherits WHERE inhparent = 'pgceiling.transactions'::regclass`); n != int64(spec.Months+4) {
		t.Errorf("partitions = %d, want %d", n, spec.Months+4)
	}
	if n := count(t, conn, `SELECT count(*) FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
		WHERE i.inhparent = 'pgceiling.transactions'::regclass AND pg_get_expr(c.relpartbound, c.oid) = 'DEFAULT'`); n != 1 {
		t.Errorf("default partitions = %d, want 1", n)
	}

	// Index counts (parent indexes; every partition has the same 5), all B-tree and valid.
	sizes, sb, err := schema.Sizes(ctx, conn)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int{}
	for _, s := range sizes {
		got[s.Name] = s.Indexes
		want := map[string]int64{"transactions": spec.Rows, "audit_log": spec.Rows / 10, "wallets": int64(spec.Wallets), "events": 0}[s.Name]
		if s.Rows != want || (want > 0 && (s.HeapBytes <= 0 || s.IndexBytes <= 0)) {
			t.Errorf("Sizes: %+v, want %d rows and non-zero sizes", s, want)
		}
	}
	if got["transactions"] != 5 || got["audit_log"] != 2 || got["wallets"] != 1 || got["events"] != 1 {
		t.Errorf("index counts = %v, want transactions 5, audit_log 2, wallets 1, events 1", got)
	}
	if sb <= 0 {
		t.Errorf("shared_buffers bytes = %d", sb)
	}
	if n := count(t, conn, `SELECT count(*) FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid JOIN pg_am a ON a.oid = c.relam
		JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = 'pgceiling' AND (a.amname <> 'btree' OR NOT i.indisvalid)`); n != 0 {
		t.Errorf("%d pgceiling indexes are not valid B-trees", n)
	}
	for _, p := range []string{"transactions_y", "transactions_default"} {
		if n := count(t, conn, `SELECT min(cnt) * 1000 + max(cnt) FROM (SELECT count(i.indexrelid) AS cnt FROM pg_class c
			JOIN pg_namespace n ON n.oid = c.relnamespace LEFT JOIN pg_index i ON i.indrelid = c.oid
			WHERE n.nspname = 'pgceiling' AND c.relkind = 'r' AND c.relname LIKE $1 || '%' GROUP BY c.oid) x`, p); n != 5005 {
			t.Errorf("partitions %s*: fewest*1000+most indexes = %d, want 5005 (5 each, none duplicated)", p, n)
		}
	}
	// Every partition index is attached to the parent's; a loaded partition's carry its
	// name (transactions_pkey's is <partition>_pkey, and is its primary key), the names
	// every schema of this format has. The empty partitions' are PostgreSQL's.
	irows, err := conn.Query(ctx, `SELECT c.relname, i.relname, coalesce(pi.relname, ''), x.indisprimary, c.reltuples > 0
		FROM pg_inherits pt JOIN pg_class c ON c.oid = pt.inhrelid
		JOIN pg_index x ON x.indrelid = c.oid JOIN pg_class i ON i.oid = x.indexrelid
		LEFT JOIN pg_inherits ii ON ii.inhrelid = i.oid LEFT JOIN pg_class pi ON pi.oid = ii.inhparent
		WHERE pt.inhparent = 'pgceiling.transactions'::regclass ORDER BY 1, 2`)
	if err != nil {
		t.Fatal(err)
	}
	loaded := map[string]int{}
	for irows.Next() {
		var part, index, parent string
		var primary, hasRows bool
		if err := irows.Scan(&part, &index, &parent, &primary, &hasRows); err != nil {
			t.Fatal(err)
		}
		if parent == "" {
			t.Errorf("index %s of partition %s is not attached to an index of transactions", index, part)
			continue
		}
		if primary != (parent == "transactions_pkey") {
			t.Errorf("index %s of partition %s (attached to %s): primary key = %v", index, part, parent, primary)
		}
		if hasRows {
			loaded[part]++
			if want := part + strings.TrimPrefix(parent, "transactions"); index != want {
				t.Errorf("partition %s: index attached to %s is named %s, want %s", part, parent, index, want)
			}
		}
	}
	if err := irows.Err(); err != nil {
		t.Fatal(err)
	}
	if len(loaded) != spec.Months {
		t.Errorf("loaded partitions with indexes: %v, want %d of them", loaded, spec.Months)
	}

	// Rows: exact counts, ids 1..Rows, created_at in the history up to now.
	if n := count(t, conn, `SELECT count(*) FROM pgceiling.transactions`); n != spec.Rows {
		t.Errorf("transactions rows = %d, want %d", n, spec.Rows)
	}
	if n := count(t, conn, `SELECT count(DISTINCT id) FROM pgceiling.transactions WHERE id BETWEEN 1 AND $1`, spec.Rows); n != spec.Rows {
		t.Errorf("distinct ids in 1..%d = %d", spec.Rows, n)
	}
	if n := count(t, conn, `SELECT count(*) FROM pgceiling.transactions_default`); n != 0 {
		t.Errorf("default partition holds %d rows, want 0", n)
	}
	// The history ends 24 h before init (schema.HistoryGap), so no fraud window reaches it.
	if n := count(t, conn, `SELECT count(*) FROM pgceiling.transactions WHERE created_at > now() - interval '24 hours'
		OR created_at < date_trunc('month', now() - interval '24 hours') - interval '2 months'`); n != 0 {
		t.Errorf("%d rows outside the 3 months of history that end 24 h before init", n)
	}
	st, err := schema.Status(ctx, conn)
	if err != nil || st.HistoryEnd.IsZero() || time.Since(st.HistoryEnd) < schema.HistoryGap || time.Since(st.HistoryEnd) > schema.HistoryGap+time.Hour {
		t.Errorf("Status().HistoryEnd = %v (%v), want about 24 h ago", st.HistoryEnd, err)
	}
	if n := count(t, conn, `SELECT count(*) FROM pgceiling.transactions WHERE created_at >= $1`, st.HistoryEnd); n != 0 {
		t.Errorf("%d rows at or after the recorded history end %v", n, st.HistoryEnd)
	}
	if n := count(t, conn, `SELECT count(*) FROM pgceiling.audit_log`); n != spec.Rows/10 {
		t.Errorf("audit_log rows = %d, want %d", n, spec.Rows/10)
	}
	if n := count(t, conn, `SELECT count(*) FROM pgceiling.wallets WHERE status = 'active' AND balance = 1000000.00`); n != int64(spec.Wallets) {
		t.Errorf("active wallets at 1,000,000.00 = %d, want %d", n, spec.Wallets)
	}
	if n := count(t, conn, `SELECT nextval('pgceiling.transactions_id_seq')`); n != spec.Rows+1 {
		t.Errorf("next transaction id = %d, want %d", n, spec.Rows+1)
	}
	if n := count(t, conn, `SELECT count(*) FROM pgceiling.transactions WHERE metadata->>'channel' IS NULL OR metadata->'merchant'->>'id' IS NULL`); n != 0 {
		t.Errorf("%d rows without the expected jsonb metadata", n)
	}

	// Wallets are Zipf: the hottest wallet's share near the exact expectation.
	keys, _ := workload.NewKeys(spec.Wallets, spec.Zipf)
	hot := float64(count(t, conn, `SELECT count(*) FROM pgceiling.transactions WHERE wallet_id = 1`)) / float64(spec.Rows)
	p := keys.Share(1)
	if sigma := math.Sqrt(p * (1 - p) / float64(spec.Rows)); math.Abs(hot-p) > 5*sigma {
		t.Errorf("hottest wallet share = %.4f, want %.4f ± %.4f", hot, p, 5*sigma)
	}
	if top := count(t, conn, `SELECT wallet_id FROM pgceiling.transactions GROUP BY wallet_id ORDER BY count(*) DESC LIMIT 1`); top != 1 {
		t.Errorf("hottest wallet = %d, want 1", top)
	}

	spec2, err := schema.Check(ctx, conn)
	if err != nil || spec2 != spec {
		t.Errorf("Check = %+v, %v; want %+v", spec2, err, spec)
	}
}

// The same spec and time give the same rows, whether loaded by binary or text COPY
// FREEZE or by pgx's CopyFrom, and whatever the number of workers.
func TestInitDeterministic(t *testing.T) {
	spec := small()
	spec.Rows = 5_000
	now := time.Date(2026, 5, 17, 12, 0, 0, 0, time.UTC)
	var sums []string
	for _, opt := range []schema.InitOptions{{Workers: 1, Now: now}, {Workers: 3, Now: now, Copy: schema.CopyPgx},
		{Workers: 2, Now: now, Copy: schema.CopyTextFreeze, SerialIndexes: true}} {
		cfg, conn := setup(t)
		mustInit(t, cfg, spec, opt)
		sizes, _, err := schema.Sizes(context.Background(), conn)
		if err != nil || sizes[0].Name != "transactions" || sizes[0].Indexes != 5 || sizes[1].Indexes != 2 {
			t.Errorf("Init(%+v): sizes %+v, %v; want 5 and 2 indexes", opt, sizes, err)
		}
		var sum string
		if err := conn.QueryRow(context.Background(), `SELECT md5(string_agg(t::text, E'\n' ORDER BY id)) FROM pgceiling.transactions t`).Scan(&sum); err != nil {
			t.Fatal(err)
		}
		sums = append(sums, sum)
	}
	if sums[0] != sums[1] || sums[0] != sums[2] {
		t.Errorf("contents differ between binary COPY FREEZE/1 worker, pgx CopyFrom/3 workers and text COPY FREEZE/serial indexes: %v", sums)
	}
}

func TestInitAgain(t *testing.T) {
	cfg, conn := setup(t)
	ctx := context.Background()
	spec := small()
	mustInit(t, cfg, spec, schema.InitOptions{})
	var created string
	conn.QueryRow(ctx, `SELECT value FROM pgceiling.meta WHERE key = 'created_at'`).Scan(&created)

	made := mustInit(t, cfg, spec, schema.InitOptions{})
	if !made.AlreadyThere {
		t.Errorf("Init with the same spec: AlreadyThere = false, want true")
	}
	var created2 string
	conn.QueryRow(ctx, `SELECT value FROM pgceiling.meta WHERE key = 'created_at'`).Scan(&created2)
	if created != created2 {
		t.Errorf("Init with the same spec rebuilt the schema (created_at %s -> %s)", created, created2)
	}

	other := spec
	other.Rows = 3_000
	_, err := schema.Init(ctx, cfg, other, schema.InitOptions{Workers: 2})
	if err == nil || !strings.Contains(err.Error(), "--force") {
		t.Fatalf("Init with another spec: err = %v, want one asking for --force", err)
	}
	if n := count(t, conn, `SELECT count(*) FROM pgceiling.transactions`); n != spec.Rows {
		t.Errorf("refused Init changed the data: %d rows", n)
	}
	made = mustInit(t, cfg, other, schema.InitOptions{Force: true})
	if !made.Rebuilt {
		t.Errorf("forced Init: Rebuilt = false")
	}
	if n := count(t, conn, `SELECT count(*) FROM pgceiling.transactions`); n != other.Rows {
		t.Errorf("after forced Init: %d rows, want %d", n, other.Rows)
	}
	// Force also rebuilds a schema that already matches.
	if made = mustInit(t, cfg, other, schema.InitOptions{Force: true}); !made.Rebuilt || made.AlreadyThere {
		t.Errorf("forced Init with the same spec: %+v, want a rebuild", made)
	}
}

func TestUnmarkedSchemaUntouched(t *testing.T) {
	for _, ddl := range []string{
		`CREATE SCHEMA pgceiling; CREATE TABLE pgceiling.precious (v int); INSERT INTO pgceiling.precious VALUES (1), (2)`,
		// a meta table of another shape, and one of our shape without the marker
		`CREATE SCHEMA pgceiling; CREATE TABLE pgceiling.meta (id int); CREATE TABLE pgceiling.precious (v int); INSERT INTO pgceiling.precious VALUES (1), (2)`,
		`CREATE SCHEMA pgceiling; CREATE TABLE pgceiling.meta (key text, value text); INSERT INTO pgceiling.meta VALUES ('marker', 'someone else'); CREATE TABLE pgceiling.precious (v int); INSERT INTO pgceiling.precious VALUES (1), (2)`,
	} {
		cfg, conn := setup(t)
		ctx := context.Background()
		if _, err := conn.Exec(ctx, ddl); err != nil {
			t.Fatal(err)
		}
		for _, force := range []bool{false, true} {
			_, err := schema.Init(ctx, cfg, small(), schema.InitOptions{Workers: 2, Force: force})
			if !errors.Is(err, schema.ErrNotOurs) {
				t.Errorf("%s: Init(force=%v) = %v, want ErrNotOurs", ddl, force, err)
			}
		}
		if err := schema.Drop(ctx, conn); !errors.Is(err, schema.ErrNotOurs) {
			t.Errorf("%s: Drop = %v, want ErrNotOurs", ddl, err)
		}
		if _, err := schema.Check(ctx, conn); !errors.Is(err, schema.ErrNotOurs) {
			t.Errorf("%s: Check = %v, want ErrNotOurs", ddl, err)
		}
		if n := count(t, conn, `SELECT sum(v) FROM pgceiling.precious`); n != 3 {
			t.Errorf("%s: the unmarked schema's table changed: sum %d", ddl, n)
		}
	}
}

func TestDrop(t *testing.T) {
	cfg, conn := setup(t)
	ctx := context.Background()
	if err := schema.Drop(ctx, conn); !errors.Is(err, schema.ErrMissing) {
		t.Errorf("Drop with no schema = %v, want ErrMissing", err)
	}
	if _, err := schema.Check(ctx, conn); !errors.Is(err, schema.ErrMissing) {
		t.Errorf("Check with no schema = %v, want ErrMissing", err)
	}
	spec := small()
	spec.Rows = 1_000
	mustInit(t, cfg, spec, schema.InitOptions{})
	if err := schema.Drop(ctx, conn); err != nil {
		t.Fatalf("Drop: %v", err)
	}
	if n := count(t, conn, `SELECT count(*) FROM pg_namespace WHERE nspname = 'pgceiling'`); n != 0 {
		t.Errorf("schema pgceiling still exists after Drop")
	}
}

// An Init cancelled in the middle leaves a marked schema in state loading; Check calls it
// not ready, and the next Init rebuilds it completely.
func TestInitInterrupted(t *testing.T) {
	cases := []struct {
		name    string
		rows    int64
		workers int
		stop    func(schema.Progress) bool
	}{
		{"load-start", 20_000, 2, func(p schema.Progress) bool { return p.Phase == schema.PhaseLoad }},
		// Rows already streaming (or, on a fast machine, the load just done).
		{"load-midway", 150_000, 1, func(p schema.Progress) bool {
			return p.Phase == schema.PhaseLoad && p.Done > 0 || p.Phase == schema.PhaseIndex
		}},
		{"index", 20_000, 2, func(p schema.Progress) bool { return p.Phase == schema.PhaseIndex }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg, conn := setup(t)
			spec := small()
			spec.Rows = c.rows
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			_, err := schema.Init(ctx, cfg, spec, schema.InitOptions{Workers: c.workers, Progress: func(p schema.Progress) {
				if c.stop(p) {
					cancel()
				}
			}})
			if err == nil {
				t.Fatalf("Init cancelled (%s) returned no error", c.name)
			}
			phase := c.name
			st, err := schema.Status(context.Background(), conn)
			if err != nil || !st.Marked || st.Ready || st.State != schema.StateLoading {
				t.Fatalf("after cancel in %s: Status = %+v, %v; want marked, loading", phase, st, err)
			}
			if _, err := schema.Check(context.Background(), conn); !errors.Is(err, schema.ErrNotReady) {
				t.Errorf("Check after cancel = %v, want ErrNotReady", err)
			}
			made := mustInit(t, cfg, spec, schema.InitOptions{})
			if !made.Rebuilt {
				t.Errorf("Init after an interruption: Rebuilt = false")
			}
			if n := count(t, conn, `SELECT count(*) FROM pgceiling.transactions`); n != spec.Rows {
				t.Errorf("after re-init: %d rows, want %d", n, spec.Rows)
			}
			if _, err := schema.Check(context.Background(), conn); err != nil {
				t.Errorf("Check after re-init: %v", err)
			}
		})
	}
}

// Init, a forced re-init and Drop change nothing outside schema pgceiling.
func TestTouchOnlyOurs(t *testing.T) {
	cfg, conn := setup(t)
	ctx := context.Background()
	_, err := conn.Exec(ctx, `
		CREATE TABLE public.accounts (id int PRIMARY KEY, name text, balance numeric(12,2));
		INSERT INTO public.accounts SELECT g, 'acct ' || g, g * 1.5 FROM generate_series(1, 500) g;
		CREATE SCHEMA other;
		CREATE TABLE other.transactions (id bigserial PRIMARY KEY, created_at timestamptz DEFAULT now(), note text);
		CREATE INDEX ON other.transactions (created_at);
		INSERT INTO other.transactions (note) SELECT 'n' || g FROM generate_series(1, 300) g;
		CREATE SEQUENCE other.counter START 40;
		SELECT nextval('other.counter');
		CREATE FUNCTION public.add_one(x int) RETURNS int LANGUAGE sql AS 'SELECT x + 1';
		CREATE VIEW other.recent AS SELECT * FROM other.transactions WHERE id > 10;
		CREATE TABLE public.meta (key text, value text);
		INSERT INTO public.meta VALUES ('marker', 'not pgceiling');`)
	if err != nil {
		t.Fatal(err)
	}
	before, err := schematest.ForeignChecksum(ctx, conn)
	if err != nil {
		t.Fatal(err)
	}
	check := func(step string) {
		t.Helper()
		after, err := schematest.ForeignChecksum(ctx, conn)
		if err != nil {
			t.Fatal(err)
		}
		if after != before {
			t.Errorf("after %s, the other schemas changed (checksum %s -> %s)", step, before, after)
		}
	}
	spec := small()
	spec.Rows = 4_000
	mustInit(t, cfg, spec, schema.InitOptions{})
	check("init")
	b := mustBaseline(t, conn)
	if _, err := schema.Backfill(ctx, conn, schema.BackfillSpec{Rate: 50, Window: time.Minute, Limit: 20, Wallets: spec.Wallets, Zipf: 1, Seed: 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := schema.Restore(ctx, conn, b); err != nil {
		t.Fatal(err)
	}
	if _, _, err := schema.Sizes(ctx, conn); err != nil {
		t.Fatal(err)
	}
	check("baseline, back-fill, restore and sizes")
	spec.Wallets = 50
	mustInit(t, cfg, spec, schema.InitOptions{Force: true})
	check("forced re-init")
	if err := schema.Drop(ctx, conn); err != nil {
		t.Fatal(err)
	}
	check("drop")
	// The checksum itself must see changes, or the test proves nothing.
	conn.Exec(ctx, `UPDATE public.accounts SET name = 'x' WHERE id = 7`)
	if after, _ := schematest.ForeignChecksum(ctx, conn); after == before {
		t.Errorf("ForeignChecksum did not notice a changed row")
	}
}

func TestBaselineRestore(t *testing.T) {
	for _, withEvents := range []bool{false, true} {
		cfg, conn := setup(t)
		ctx := context.Background()
		spec := small()
		spec.Rows = 3_000
		mustInit(t, cfg, spec, schema.InitOptions{})
		if withEvents {
			conn.Exec(ctx, `INSERT INTO pgceiling.events (id, payload, created_at)
				SELECT gen_random_uuid(), 'kept', now() - interval '1 hour' FROM generate_series(1, 25)`)
		}
		b := mustBaseline(t, conn)
		if b.TransactionsRows != spec.Rows || b.TransactionsMaxID != spec.Rows || b.AuditRows != spec.Rows/10 {
			t.Fatalf("baseline = %+v", b)
		}
		// What a probe does.
		_, err := conn.Exec(ctx, `
			INSERT INTO pgceiling.transactions (wallet_id, amount, currency, kind, status, reference, metadata)
				SELECT 1 + g % 10, 12.50, 'EUR', 'payment', 'completed', 'probe-' || g, '{}' FROM generate_series(1, 700) g;
			INSERT INTO pgceiling.audit_log (wallet_id, action, actor) SELECT 3, 'x', 'probe' FROM generate_series(1, 300);
			INSERT INTO pgceiling.events (id, payload) SELECT gen_random_uuid(), 'probe' FROM generate_series(1, 400);
			UPDATE pgceiling.wallets SET balance = balance - 10, updated_at = now() WHERE account_id = 1;
			UPDATE pgceiling.wallets SET balance = balance + 10, updated_at = now() WHERE account_id = 2;
			UPDATE pgceiling.wallets SET status = 'frozen' WHERE account_id = 3;`)
		if err != nil {
			t.Fatal(err)
		}
		if n, _ := schema.RowCount(ctx, conn, "transactions"); n != spec.Rows+700 {
			t.Errorf("RowCount(transactions) = %d, want %d", n, spec.Rows+700)
		}
		counter := schema.Counter(conn, b)
		for table, want := range map[string]int64{"transactions": 700, "audit_log": 300, "events": 400} {
			if n, err := schema.RowsSince(ctx, conn, table, b); n != want || err != nil {
				t.Errorf("RowsSince(%s) = %d, %v; want %d", table, n, err, want)
			}
			exact, _ := schema.RowCount(ctx, conn, table)
			if n, err := counter(ctx, table); n != exact || err != nil {
				t.Errorf("Counter(%s) = %d, %v; want count(*) = %d", table, n, err, exact)
			}
		}
		r, err := schema.Restore(ctx, conn, b)
		if err != nil {
			t.Fatalf("Restore: %v", err)
		}
		if r.TransactionsRows != 700 || r.AuditRows != 300 || r.EventsRows != 400 || r.WalletsRestored != 3 || r.Seconds <= 0 {
			t.Errorf("Restore = %+v, want 700 transactions, 300 audit, 400 events, 3 wallets deleted/restored", r)
		}
		b2 := mustBaseline(t, conn)
		b2.TakenAt = b.TakenAt
		if b2.TransactionsRows != b.TransactionsRows || b2.TransactionsMaxID != b.TransactionsMaxID ||
			b2.AuditRows != b.AuditRows || b2.AuditMaxID != b.AuditMaxID || b2.EventsRows != b.EventsRows ||
			b2.WalletBalanceTotal != b.WalletBalanceTotal {
			t.Errorf("after Restore: %+v\nwant %+v", b2, b)
		}
		if n := count(t, conn, `SELECT count(*) FROM pgceiling.wallets w JOIN pgceiling.wallets_baseline b USING (account_id)
			WHERE w.balance <> 1000000 OR w.status <> 'active' OR w.updated_at <> b.updated_at`); n != 0 {
			t.Errorf("after Restore %d wallets differ from the baseline", n)
		}
		if n := count(t, conn, `SELECT nextval('pgceiling.transactions_id_seq')`); n != spec.Rows+1 {
			t.Errorf("after Restore next id = %d, want %d", n, spec.Rows+1)
		}
		if err := schema.Checkpoint(ctx, conn); err != nil {
			t.Errorf("Checkpoint: %v", err)
		}
	}
	if _, err := schema.RowCount(context.Background(), nil, "public.x"); err == nil {
		t.Errorf("RowCount of a foreign table: no error")
	}
}

// TestCompactRebuildsChurnedIndexes: the first Compact rebuilds the churned tables'
// indexes; after probes' worth of inserts and restores has grown them past IndexBloat it
// rebuilds them again, back to about their compact size; with no growth it rebuilds none.
func TestCompactRebuildsChurnedIndexes(t *testing.T) {
	cfg, conn := setup(t)
	ctx := context.Background()
	spec := small()
	spec.Rows = 3_000
	mustInit(t, cfg, spec, schema.InitOptions{})
	b := mustBaseline(t, conn)
	since := b.TakenAt.Add(-schema.HistoryGap)
	rebuilt, compact, err := schema.Compact(ctx, conn, since, nil)
	if err != nil || !slices.Contains(rebuilt, "pgceiling.audit_log") || len(rebuilt) < 2 || compact["audit_log"] == 0 {
		t.Fatalf("first Compact = %v, %v, %v; want every churned table rebuilt, audit_log among them", rebuilt, compact, err)
	}
	if again, _, err := schema.Compact(ctx, conn, since, compact); err != nil || len(again) != 0 {
		t.Fatalf("Compact without growth = %v, %v; want nothing rebuilt", again, err)
	}
	// Probes: rows in random key order into the current partition and audit_log, then the
	// restore deletes them and vacuums; three times over.
	for range 3 {
		if _, err := conn.Exec(ctx, `
			INSERT INTO pgceiling.transactions (wallet_id, amount, currency, kind, status, reference, metadata)
				SELECT 1 + (g * 7919) % 100, 12.50, 'EUR', 'payment', 'completed', md5(g::text), '{}' FROM generate_series(1, 40000) g;
			INSERT INTO pgceiling.audit_log (wallet_id, action, actor) SELECT 1 + (g * 7919) % 100, 'x', 'probe' FROM generate_series(1, 40000) g;`); err != nil {
			t.Fatal(err)
		}
		if _, err := schema.Restore(ctx, conn, b); err != nil {
			t.Fatal(err)
		}
	}
	rebuilt, after, err := schema.Compact(ctx, conn, since, compact)
	if err != nil || !slices.Contains(rebuilt, "pgceiling.audit_log") {
		t.Fatalf("Compact after churn = %v, %v; want audit_log rebuilt", rebuilt, err)
	}
	if a, c := after["audit_log"], compact["audit_log"]; float64(a) > schema.IndexBloat*float64(c) {
		t.Errorf("audit_log's indexes %d bytes after the rebuild, compact %d: not rebuilt to size", a, c)
	}
}
