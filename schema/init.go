package schema

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"golang.org/x/sync/errgroup"

	"github.com/pgceiling/pgceiling/result"
	"github.com/pgceiling/pgceiling/workload"
)

// InitOptions are how Init works, as opposed to what it builds (Spec).
type InitOptions struct {
	// Workers is the number of parallel sessions for the load and the index build.
	// Zero: 1.
	Workers int
	// Force rebuilds a marked schema even when it already matches the spec or was made
	// with another spec. It never touches an unmarked schema.
	Force bool
	// Progress, when set, is called from one goroutine about twice a second and at every
	// phase change.
	Progress func(Progress)
	// Copy is how rows are sent: CopyBinaryFreeze (the default), CopyTextFreeze or
	// CopyPgx. The others exist to measure the levers.
	Copy CopyMode
	// SerialIndexes runs indexes.sql as it is, in one session (PostgreSQL's own parallel
	// index build, max_parallel_maintenance_workers, still applies), instead of building
	// the partitions' indexes in parallel sessions. For measuring that lever.
	SerialIndexes bool
	// MaintenanceWorkMem for each index-building session. Empty: "256MB".
	MaintenanceWorkMem string
	// Now is init's clock: the prefilled history ends HistoryGap before it. Zero: the
	// server's clock.
	Now time.Time
}

// CopyMode is how the prefill sends rows.
type CopyMode int

// The ways to send rows.
const (
	// CopyBinaryFreeze streams COPY ... (FORMAT binary, FREEZE): the server parses
	// nothing (numbers and timestamps arrive in their binary form) and writes frozen pages.
	CopyBinaryFreeze CopyMode = iota
	// CopyTextFreeze streams COPY ... (FREEZE) in text format.
	CopyTextFreeze
	// CopyPgx uses pgx's CopyFrom with CopyFromFunc (binary, but pgx cannot ask for FREEZE).
	CopyPgx
)

func (m CopyMode) String() string {
	switch m {
	case CopyBinaryFreeze:
		return "binary COPY FREEZE"
	case CopyTextFreeze:
		return "text COPY FREEZE"
	case CopyPgx:
		return "pgx CopyFrom (no FREEZE)"
	}
	return fmt.Sprintf("CopyMode(%d)", int(m))
}

// Phases Init reports through Progress.
const (
	PhaseSchema  = "schema"
	PhaseLoad    = "load"
	PhaseIndex   = "index"
	PhaseAnalyze = "analyze"
	PhaseDone    = "done"
)

// Progress is a snapshot of Init's work.
type Progress struct {
	Phase   string
	Done    int64 // rows loaded (load phase) or index builds done (index phase)
	Total   int64
	Rate    float64       // rows (or builds) per second in this phase so far
	ETA     time.Duration // of this phase; 0 when unknown
	Elapsed time.Duration // since Init started
}

// Made is what Init did.
type Made struct {
	// AlreadyThere: the schema already matched the spec and was ready; nothing changed.
	AlreadyThere bool
	// Rebuilt: an existing marked schema (other spec, interrupted, or Force) was dropped.
	Rebuilt    bool
	Spec       Spec
	Partitions int   // transactions partitions, default included
	Rows       int64 // rows loaded into transactions
	AuditRows  int64 // rows loaded into audit_log
	Wallets    int
	Schema     time.Duration
	Load       time.Duration
	Index      time.Duration
	Analyze    time.Duration
	Total      time.Duration
}

// auditShare is audit_log's prefill relative to transactions.
const auditShare = 10

// citusSetup is what Init learnt of the Citus coordinator it distributes the schema on.
type citusSetup struct {
	schemaSharding bool // citus.enable_schema_based_sharding exists (Citus 12 and later)
}

// execEach runs each statement in tx, in order.
func execEach(ctx context.Context, tx pgx.Tx, stmts []string) error {
	for _, s := range stmts {
		if _, err := tx.Exec(ctx, s); err != nil {
			return fmt.Errorf("%s: %w", s, err)
		}
	}
	return nil
}

// InitialBalance is every wallet's balance after Init, in cents.
const InitialBalance = 1_000_000_00

// Init creates schema pgceiling to spec and prefills it, following the safety rules:
// an unmarked schema is never touched (ErrNotOurs); a ready schema with the same spec is
// left as it is (Made.AlreadyThere); a schema with another spec or format needs
// opt.Force; an interrupted one (state loading) is rebuilt. The old schema is dropped
// and the new one created in the same transaction, and the marker says "loading" until
// the prefill, indexes and ANALYZE are done, so an interruption at any point leaves a
// schema the next Init rebuilds.
//
// Init opens its own sessions from cfg (one, plus opt.Workers during the load and the
// index build) and closes them before it returns; with a pool, pass
// pool.Config().ConnConfig.
func Init(ctx context.Context, cfg *pgx.ConnConfig, spec Spec, opt InitOptions) (*Made, error) {
	if err := spec.validate(); err != nil {
		return nil, err
	}
	if opt.Workers < 1 {
		opt.Workers = 1
	}
	if opt.MaintenanceWorkMem == "" {
		opt.MaintenanceWorkMem = "256MB"
	}
	start := time.Now()
	made := &Made{Spec: spec, Wallets: spec.Wallets}
	pool := &sessions{cfg: cfg}
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("connect: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	// A distributed schema needs Citus; checked before anything is changed.
	var citus *citusSetup
	if spec.Distribute == DistributeCitus {
		sharding, err := checkCitus(ctx, conn)
		if err != nil {
			return nil, err
		}
		citus = &citusSetup{schemaSharding: sharding}
	}
	st, err := Status(ctx, conn)
	if err != nil {
		return nil, err
	}
	if st.Exists {
		switch {
		case !st.Marked:
			return nil, ErrNotOurs
		case st.Ready && st.SameFormat && st.SpecOK && st.Spec == spec && !opt.Force:
			made.AlreadyThere = true
			return made, nil
		case st.Ready && !opt.Force:
			if !st.SameFormat || !st.SpecOK {
				return nil, fmt.Errorf("schema pgceiling was made by pgceiling %s with another schema format: rebuild it with --force (this deletes its data)", st.ToolVersion)
			}
			return nil, fmt.Errorf("schema pgceiling already exists with another spec (%s; asked for %s): rebuild it with --force (this deletes its data)", st.Spec, spec)
		}
		made.Rebuilt = true
	}
	rep := newReporter(opt.Progress, start)
	rep.phase(PhaseSchema, 0)
	keys, err := workload.NewKeys(spec.Wallets, spec.Zipf)
	if err != nil {
		return nil, err
	}
	now := opt.Now
	if now.IsZero() {
		if err := conn.QueryRow(ctx, `SELECT now()`).Scan(&now); err != nil {
			return nil, fmt.Errorf("read the server's clock: %w", err)
		}
	}
	parts := layout(spec, now)
	made.Partitions = len(parts) + 1
	t0 := time.Now()
	if err := create(ctx, conn, spec, parts, historyEnd(now), made.Rebuilt, citus); err != nil {
		return nil, err
	}
	made.Schema = time.Since(t0)

	t0 = time.Now()
	made.AuditRows = spec.Rows / auditShare
	rep.phase(PhaseLoad, spec.Rows+made.AuditRows)
	if err := load(ctx, pool, spec, keys, parts, made.AuditRows, opt, citus == nil, &rep.done); err != nil {
		rep.stop()
		return nil, err
	}
	made.Rows = spec.Rows
	made.Load = time.Since(t0)

	t0 = time.Now()
	if err := buildIndexes(ctx, pool, parts, opt, citus != nil, rep); err != nil {
		rep.stop()
		return nil, err
	}
	made.Index = time.Since(t0)

	t0 = time.Now()
	rep.phase(PhaseAnalyze, 0)
	if err := analyze(ctx, pool, parts, opt.Workers); err != nil {
		rep.stop()
		return nil, err
	}
	if err := finish(ctx, conn, spec, made.AuditRows); err != nil {
		rep.stop()
		return nil, err
	}
	made.Analyze = time.Since(t0)
	made.Total = time.Since(start)
	rep.phase(PhaseDone, 0)
	rep.stop()
	return made, nil
}

func (s Spec) validate() error {
	var p []string
	if s.Wallets < 2 {
		p = append(p, fmt.Sprintf("wallets must be at least 2, got %d", s.Wallets))
	}
	if s.Rows < 1 {
		p = append(p, fmt.Sprintf("rows must be at least 1, got %d", s.Rows))
	}
	if s.Distribute != DistributeNone && s.Distribute != DistributeCitus {
		p = append(p, fmt.Sprintf("distribute must be none or citus, got %q", s.Distribute))
	}
	if s.Months < 1 || s.Months > 240 {
		p = append(p, fmt.Sprintf("months must be 1..240, got %d", s.Months))
	}
	if !(s.Zipf >= 0) || s.Zipf > 100 {
		p = append(p, fmt.Sprintf("zipf must be 0..100, got %v", s.Zipf))
	}
	if len(p) > 0 {
		return errors.New("schema spec: " + strings.Join(p, "; "))
	}
	return nil
}

// String is the spec as the flags that make it.
func (s Spec) String() string {
	f := fmt.Sprintf("--wallets %d --rows %d --months %d --zipf %g --seed %d", s.Wallets, s.Rows, s.Months, s.Zipf, s.Seed)
	if s.Distribute != DistributeNone {
		f += " --distribute " + s.Distribute
	}
	return f
}

// create drops a marked old schema (when rebuild) and creates the tables, partitions,
// marker (state loading, with where the history ends) and wallets, all in one
// transaction.
//
// With citus set, the transaction first runs citusPrelude, and the tables are
// distributed (citusTables) after the partitions are made and before any row is
// written.
func create(ctx context.Context, pool *pgx.Conn, spec Spec, parts []partition, histEnd time.Time, rebuild bool, citus *citusSetup) error {
	tx, err := pool.Begin(ctx)
	if err != nil {
		return fmt.Errorf("init: begin: %w", err)
	}
	defer tx.Rollback(ctx)
	if citus != nil {
		if err := execEach(ctx, tx, citusPrelude(citus.schemaSharding)); err != nil {
			return fmt.Errorf("init: prepare the Citus transaction: %w", err)
		}
	}
	if rebuild {
		if err := dropInTx(ctx, tx); err != nil && !errors.Is(err, ErrMissing) {
			return err
		}
	}
	if _, err := tx.Exec(ctx, `CREATE SCHEMA pgceiling`); err != nil {
		return fmt.Errorf("create schema pgceiling: %w", err)
	}
	ddl, err := sqlFiles.ReadFile("sql/tables.sql")
	if err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, string(ddl)); err != nil {
		return fmt.Errorf("create tables (tables.sql): %w", err)
	}
	specJSON, _ := json.Marshal(spec)
	_, err = tx.Exec(ctx, `INSERT INTO pgceiling.meta (key, value) VALUES
		('marker', $1), ('format', $2), ('spec', $3), ('tool_version', $4),
		('created_at', to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')), ('state', $5),
		('history_end', $6)`,
		marker, strconv.Itoa(Format), string(specJSON), result.ToolVersion, StateLoading, histEnd.UTC().Format(time.RFC3339Nano))
	if err != nil {
		return fmt.Errorf("write the marker: %w", err)
	}
	var b strings.Builder
	for _, p := range parts {
		fmt.Fprintf(&b, "CREATE TABLE pgceiling.%s PARTITION OF pgceiling.transactions FOR VALUES FROM ('%s') TO ('%s');\n",
			p.Name, p.From.Format(time.RFC3339), p.To.Format(time.RFC3339))
	}
	b.WriteString("CREATE TABLE pgceiling.transactions_default PARTITION OF pgceiling.transactions DEFAULT;\n")
	if _, err := tx.Exec(ctx, b.String()); err != nil {
		return fmt.Errorf("create partitions: %w", err)
	}
	if citus != nil {
		if err := execEach(ctx, tx, citusTables()); err != nil {
			return fmt.Errorf("distribute the tables with Citus: %w", err)
		}
	}
	_, err = tx.Exec(ctx, `INSERT INTO pgceiling.wallets (account_id, balance, status, updated_at)
		SELECT g, $2::numeric / 100, 'active', now() FROM generate_series(1, $1::bigint) g`, spec.Wallets, InitialBalance)
	if err != nil {
		return fmt.Errorf("fill wallets: %w", err)
	}
	// The wallets as Restore puts them back between probes (transfer changes balance
	// and updated_at).
	if citus != nil {
		if _, err := tx.Exec(ctx, citusBaseline); err != nil {
			return fmt.Errorf("keep the wallets' baseline: %w", err)
		}
		if err := tx.Commit(ctx); err != nil {
			return fmt.Errorf("init: commit schema: %w", err)
		}
		return nil
	}
	_, err = tx.Exec(ctx, `CREATE TABLE pgceiling.wallets_baseline AS
		SELECT account_id, balance, status, updated_at FROM pgceiling.wallets;
		ALTER TABLE pgceiling.wallets_baseline ADD PRIMARY KEY (account_id)`)
	if err != nil {
		return fmt.Errorf("keep the wallets' baseline: %w", err)
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("init: commit schema: %w", err)
	}
	return nil
}

// loadTask is one COPY: a partition of transactions or audit_log.
type loadTask struct {
	table string
	rows  int64
	gen   func() rowSource
}

// rowSource is one table's rows in each form the COPY modes take.
type rowSource struct {
	text   func([]byte) ([]byte, bool) // appends one row in text format
	binary func([]byte) ([]byte, bool) // appends one row as a binary tuple; nil: text only
	values func() ([]any, bool)        // one row for pgx.CopyFrom; nil: text only
	finish func()
}

// load fills the history partitions and audit_log in parallel, one COPY per table in its
// own transaction that first truncates it, so COPY ... FREEZE writes frozen, all-visible
// pages (no hint-bit or freeze rewrites later).
//
// Without freeze (a distributed schema: Citus passes COPY's options on to each shard,
// where FREEZE would need a truncation in the same worker transaction) the tables,
// new and empty, are not truncated and COPY writes ordinary pages.
func load(ctx context.Context, pool *sessions, spec Spec, keys *workload.Keys, parts []partition, auditRows int64, opt InitOptions, freeze bool, count *atomic.Int64) error {
	var tasks []loadTask
	for _, p := range parts {
		if p.Rows == 0 {
			continue
		}
		p := p
		tasks = append(tasks, loadTask{table: p.Name, rows: p.Rows, gen: func() rowSource {
			g := newTxGen(spec.Seed, keys, p, count)
			var v []any
			return rowSource{
				text: func(b []byte) ([]byte, bool) {
					if !g.next() {
						return b, false
					}
					return g.appendText(b), true
				},
				binary: func(b []byte) ([]byte, bool) {
					if !g.next() {
						return b, false
					}
					return g.appendBinary(b), true
				},
				values: func() ([]any, bool) {
					if !g.next() {
						return nil, false
					}
					v = g.values(v)
					return v, true
				},
				finish: g.finish,
			}
		}})
	}
	if auditRows > 0 {
		first, last := parts[0].From, parts[spec.Months-1].DataTo
		tasks = append(tasks, loadTask{table: "audit_log", rows: auditRows, gen: func() rowSource {
			a := &auditGen{seed: spec.Seed, keys: keys, n: auditRows, maxTx: spec.Rows, from: first,
				step: float64(last.Sub(first)) / float64(auditRows), count: count}
			return rowSource{text: a.appendText, finish: a.finish}
		}})
	}
	// Biggest first, so the last task to finish is a small one.
	sort.SliceStable(tasks, func(i, j int) bool { return tasks[i].rows > tasks[j].rows })
	return parallel(ctx, pool, opt.Workers, len(tasks), "SET synchronous_commit = off", func(ctx context.Context, c *pgx.Conn, i int) error {
		t := tasks[i]
		if err := copyTask(ctx, c, t, opt.Copy, freeze); err != nil {
			return fmt.Errorf("prefill %s: %w", t.table, err)
		}
		return nil
	})
}

func copyTask(ctx context.Context, c *pgx.Conn, t loadTask, mode CopyMode, freeze bool) error {
	tx, err := c.Begin(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback(ctx)
	src := t.gen()
	binaryOpts, textOpts := "FORMAT binary", ""
	if freeze {
		if _, err := tx.Exec(ctx, "TRUNCATE pgceiling."+t.table); err != nil {
			return err
		}
		binaryOpts, textOpts = "FORMAT binary, FREEZE", " WITH (FREEZE)"
	}
	cols := txColumns
	if t.table == "audit_log" {
		cols = auditColumns
	}
	switch {
	case mode == CopyPgx && src.values != nil:
		_, err = tx.CopyFrom(ctx, pgx.Identifier{Name, t.table}, cols, pgx.CopyFromFunc(func() ([]any, error) {
			row, _ := src.values()
			return row, nil
		}))
	case mode == CopyBinaryFreeze && src.binary != nil:
		sql := fmt.Sprintf("COPY pgceiling.%s (%s) FROM STDIN WITH (%s)", t.table, strings.Join(cols, ", "), binaryOpts)
		_, err = c.PgConn().CopyFrom(ctx, binaryReader(src.binary), sql)
	default:
		sql := fmt.Sprintf("COPY pgceiling.%s (%s) FROM STDIN%s", t.table, strings.Join(cols, ", "), textOpts)
		_, err = c.PgConn().CopyFrom(ctx, &textReader{next: src.text}, sql)
	}
	if err != nil {
		return err
	}
	src.finish()
	return tx.Commit(ctx)
}

var auditColumns = []string{"id", "tx_id", "wallet_id", "action", "actor", "details", "created_at"}

// auditGen generates audit_log rows in COPY text format.
type auditGen struct {
	seed  int64
	keys  *workload.Keys
	n     int64
	i     int64
	maxTx int64
	from  time.Time
	step  float64
	rng   *rand.Rand
	count *atomic.Int64
}

var actions = []string{"transaction.created", "transaction.created", "transaction.settled", "wallet.viewed", "limit.checked"}

func (a *auditGen) appendText(b []byte) ([]byte, bool) {
	if a.i >= a.n {
		return b, false
	}
	if a.i%batchRows == 0 {
		// Seeds apart from the transactions' (which are seeded by ids from 1).
		a.rng = rand.New(rand.NewPCG(uint64(a.seed)^0xa0d17, uint64(a.i)))
		if a.i > 0 {
			a.count.Add(batchRows)
		}
	}
	r := a.rng
	id := a.i + 1
	at := a.from.Add(time.Duration((float64(a.i) + r.Float64()) * a.step))
	a.i++
	b = strconv.AppendInt(b, id, 10)
	b = append(b, '\t')
	b = strconv.AppendInt(b, r.Int64N(a.maxTx)+1, 10)
	b = append(b, '\t')
	b = strconv.AppendInt(b, a.keys.Pick(r), 10)
	b = append(b, '\t')
	act := actions[r.IntN(len(actions))]
	b = append(b, act...)
	b = append(b, "\tsvc-payments-"...)
	b = strconv.AppendInt(b, int64(r.IntN(8)), 10)
	b = append(b, '\t')
	b = append(b, act...)
	b = append(b, " by request "...)
	b = strconv.AppendUint(b, r.Uint64(), 36)
	b = append(b, '\t')
	b = at.AppendFormat(b, "2006-01-02 15:04:05.999999Z07:00")
	b = append(b, '\n')
	return b, true
}

func (a *auditGen) finish() {
	if a.n > 0 {
		a.count.Add((a.n-1)%batchRows + 1)
	}
}

// parallel runs n tasks, in order, at most workers at a time, each on a session set up
// with setup; a session goes back to the idle ones after its task, so no more than
// workers are ever open. The first error cancels the rest and is the one returned.
func parallel(ctx context.Context, pool *sessions, workers, n int, setup string, task func(context.Context, *pgx.Conn, int) error) error {
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(max(workers, 1))
	idle := make(chan *pgx.Conn, max(workers, 1))
	for i := range n {
		g.Go(func() error {
			if err := ctx.Err(); err != nil {
				return err
			}
			var c *pgx.Conn
			select {
			case c = <-idle:
			default:
				var err error
				if c, err = pool.open(ctx); err != nil {
					return err
				}
				if setup != "" {
					if _, err := c.Exec(ctx, setup); err != nil {
						c.Close(context.WithoutCancel(ctx))
						return err
					}
				}
			}
			if err := task(ctx, c, i); err != nil {
				c.Close(context.WithoutCancel(ctx))
				return err
			}
			idle <- c
			return nil
		})
	}
	err := g.Wait()
	close(idle)
	for c := range idle {
		c.Close(context.WithoutCancel(ctx))
	}
	return err
}

// statements splits a .sql file into statements, dropping comments.
func statements(file string) ([]string, error) {
	b, err := sqlFiles.ReadFile(file)
	if err != nil {
		return nil, err
	}
	var out []string
	var cur strings.Builder
	for _, line := range strings.Split(string(b), "\n") {
		if i := strings.Index(line, "--"); i >= 0 {
			line = line[:i]
		}
		cur.WriteString(line + " ")
		if strings.HasSuffix(strings.TrimSpace(line), ";") {
			s := strings.Join(strings.Fields(cur.String()), " ")
			out = append(out, strings.TrimSuffix(s, ";"))
			cur.Reset()
		}
	}
	if s := strings.TrimSpace(cur.String()); s != "" {
		out = append(out, s)
	}
	return out, nil
}

// partitionIndexes is the DDL of one loaded transactions partition's indexes: the
// transactions indexes of indexes.sql, written for partition p and named after it, as
// every schema of this format has them. PostgreSQL attaches a partition's index to the
// parent's index only when their definitions match (and would otherwise build another
// one), so keep the two in step; TestInitShape checks that every partition ends with
// exactly the parent's indexes, attached. The first is the primary key's unique index,
// which partitionPrimaryKey turns into the partition's primary key.
func partitionIndexes(p string) []string {
	return []string{
		"CREATE UNIQUE INDEX " + p + "_pkey ON pgceiling." + p + " (id, created_at)",
		"CREATE INDEX " + p + "_wallet_created_idx ON pgceiling." + p + " (wallet_id, created_at)",
		"CREATE INDEX " + p + "_created_idx ON pgceiling." + p + " (created_at)",
		"CREATE INDEX " + p + "_counterparty_idx ON pgceiling." + p + " (counterparty_id)",
		"CREATE INDEX " + p + "_reference_idx ON pgceiling." + p + " (reference)",
	}
}

// partitionPrimaryKey makes partition p's unique index p_pkey its primary key, which
// the parent's primary key then attaches.
func partitionPrimaryKey(p string) string {
	return "ALTER TABLE pgceiling." + p + " ADD CONSTRAINT " + p + "_pkey PRIMARY KEY USING INDEX " + p + "_pkey"
}

// buildIndexes builds indexes.sql. First parallel sessions build each loaded
// partition's indexes (partitionIndexes, biggest partitions first) and the other tables'
// indexes of indexes.sql; then one session makes the partitions' primary keys and runs
// the transactions statements of indexes.sql on the parent, where PostgreSQL attaches
// the matching partition indexes instead of building them again and only builds the
// tiny ones of the empty partitions.
//
// On a distributed schema (distributed) it runs citusIndexes on the parents, as with
// SerialIndexes: Citus builds each partition's shards' indexes itself, in parallel over
// the workers.
func buildIndexes(ctx context.Context, pool *sessions, parts []partition, opt InitOptions, distributed bool, rep *reporter) error {
	stmts, err := statements("sql/indexes.sql")
	if err != nil {
		return err
	}
	if distributed {
		if stmts, err = citusIndexes(stmts); err != nil {
			return err
		}
		opt.SerialIndexes = true
	}
	type build struct {
		sql  string
		rows int64
	}
	var builds []build
	var pks, rest []string
	if opt.SerialIndexes {
		rest = stmts
	} else {
		// Index by index, then partition by partition: with the stable sort by rows
		// below, each partition's indexes are built in indexes.sql's order.
		var loaded []partition
		var ddl [][]string
		for _, p := range parts {
			if p.Rows > 0 {
				loaded = append(loaded, p)
				ddl = append(ddl, partitionIndexes(p.Name))
				pks = append(pks, partitionPrimaryKey(p.Name))
			}
		}
		for k := range partitionIndexes("") {
			for i, p := range loaded {
				builds = append(builds, build{ddl[i][k], p.Rows})
			}
		}
		for _, s := range stmts {
			if strings.Contains(s, "pgceiling.transactions ") {
				rest = append(rest, s)
			} else {
				builds = append(builds, build{s, 0})
			}
		}
	}
	sort.SliceStable(builds, func(i, j int) bool { return builds[i].rows > builds[j].rows })
	rep.phase(PhaseIndex, int64(len(builds)))
	perBuild := parallelWorkersPerBuild(opt.Workers, len(builds))
	if opt.SerialIndexes {
		perBuild = max(opt.Workers-1, 0)
	}
	setup := fmt.Sprintf("SET maintenance_work_mem = '%s'; SET max_parallel_maintenance_workers = %d",
		strings.ReplaceAll(opt.MaintenanceWorkMem, "'", ""), perBuild)
	err = parallel(ctx, pool, opt.Workers, len(builds), setup, func(ctx context.Context, c *pgx.Conn, i int) error {
		if _, err := c.Exec(ctx, builds[i].sql); err != nil {
			return fmt.Errorf("build index (%s): %w", builds[i].sql, err)
		}
		rep.done.Add(1)
		return nil
	})
	if err != nil {
		return err
	}
	c, err := pool.open(ctx)
	if err != nil {
		return err
	}
	defer c.Close(context.WithoutCancel(ctx))
	if _, err := c.Exec(ctx, setup); err != nil {
		return err
	}
	for _, s := range append(pks, rest...) {
		if _, err := c.Exec(ctx, s); err != nil {
			return fmt.Errorf("index (%s): %w", s, err)
		}
	}
	return nil
}

// parallelWorkersPerBuild gives each build PostgreSQL's parallel workers only when there
// are fewer builds than sessions (otherwise the sessions already use every core).
func parallelWorkersPerBuild(workers, builds int) int {
	if builds >= workers {
		return 0
	}
	return max(1, workers/max(builds, 1)-1)
}

// analyze runs ANALYZE on every table with rows, each partition of transactions on its
// own, in parallel sessions. The partitioned parent itself is not analyzed: in
// PostgreSQL 15 and 16 that would analyze every partition a second time, the planner
// takes its estimates for partition scans from the partitions' statistics, and
// autovacuum never analyzes a partitioned parent in production either.
func analyze(ctx context.Context, pool *sessions, parts []partition, workers int) error {
	var tables []string
	for _, p := range parts {
		if p.Rows > 0 {
			tables = append(tables, p.Name)
		}
	}
	tables = append(tables, "audit_log", "wallets", "wallets_baseline")
	return parallel(ctx, pool, workers, len(tables), "", func(ctx context.Context, c *pgx.Conn, i int) error {
		if _, err := c.Exec(ctx, "ANALYZE pgceiling."+tables[i]); err != nil {
			return fmt.Errorf("analyze pgceiling.%s: %w", tables[i], err)
		}
		return nil
	})
}

// finish moves the sequences past the prefilled ids and marks the schema ready (with
// synchronous_commit on, which also makes the load durable).
func finish(ctx context.Context, pool *pgx.Conn, spec Spec, auditRows int64) error {
	tx, err := pool.Begin(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, `SELECT setval('pgceiling.transactions_id_seq', $1)`, spec.Rows); err != nil {
		return fmt.Errorf("set transactions_id_seq: %w", err)
	}
	if auditRows > 0 {
		if _, err := tx.Exec(ctx, `SELECT setval(pg_get_serial_sequence('pgceiling.audit_log', 'id'), $1)`, auditRows); err != nil {
			return fmt.Errorf("set audit_log's id sequence: %w", err)
		}
	}
	if _, err := tx.Exec(ctx, `SET LOCAL synchronous_commit = on`); err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, `UPDATE pgceiling.meta SET value = $1 WHERE key = 'state'`, StateReady); err != nil {
		return fmt.Errorf("mark the schema ready: %w", err)
	}
	return tx.Commit(ctx)
}

// reporter calls the Progress callback from one goroutine.
type reporter struct {
	fn        func(Progress)
	start     time.Time
	done      atomic.Int64
	mu        sync.Mutex
	cur       string
	total     int64
	since     time.Time
	stopc     chan struct{}
	stoppedWg sync.WaitGroup
}

func newReporter(fn func(Progress), start time.Time) *reporter {
	r := &reporter{fn: fn, start: start, stopc: make(chan struct{})}
	if fn == nil {
		return r
	}
	r.stoppedWg.Add(1)
	go func() {
		defer r.stoppedWg.Done()
		t := time.NewTicker(500 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-r.stopc:
				return
			case <-t.C:
				r.report()
			}
		}
	}()
	return r
}

func (r *reporter) phase(name string, total int64) {
	r.mu.Lock()
	r.cur, r.total, r.since = name, total, time.Now()
	r.done.Store(0)
	r.mu.Unlock()
	r.report()
}

func (r *reporter) report() {
	if r.fn == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	p := Progress{Phase: r.cur, Done: r.done.Load(), Total: r.total, Elapsed: time.Since(r.start)}
	if el := time.Since(r.since).Seconds(); el > 0 {
		p.Rate = float64(p.Done) / el
	}
	if p.Rate > 0 && p.Total > p.Done {
		p.ETA = time.Duration(float64(p.Total-p.Done) / p.Rate * float64(time.Second))
	}
	r.fn(p)
}

func (r *reporter) stop() {
	select {
	case <-r.stopc:
	default:
		close(r.stopc)
	}
	r.stoppedWg.Wait()
}

var _ io.Reader = (*textReader)(nil)

// sessions opens the parallel sessions of the load and the index build.
type sessions struct{ cfg *pgx.ConnConfig }

func (s *sessions) open(ctx context.Context) (*pgx.Conn, error) {
	c, err := pgx.ConnectConfig(ctx, s.cfg)
	if err != nil {
		return nil, fmt.Errorf("open a session: %w", err)
	}
	return c, nil
}
