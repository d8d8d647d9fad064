package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/pgceiling/pgceiling/config"
	"github.com/pgceiling/pgceiling/localpg"
	"github.com/pgceiling/pgceiling/result"
	"github.com/pgceiling/pgceiling/schema"
)

func init() {
	register(command{name: "init", summary: "create and prefill the pgceiling schema (partitioned, indexed, Zipf)", run: runInit})
	register(command{name: "drop", summary: "remove the pgceiling schema (only one pgceiling made)", run: runDrop})
}

// EnvPGBinDir names the directory holding the PostgreSQL server binaries (postgres,
// initdb, pg_ctl) for the embedded server, instead of looking in PATH, `pg_config
// --bindir` and /usr/lib/postgresql/*/bin.
const EnvPGBinDir = "PGCEILING_PG_BINDIR"

const initSynopsis = `Create schema pgceiling and fill it: wallets, transactions (12 columns, partitioned by
month over --months of history plus 3 months ahead and a default partition, 5 B-tree
indexes), audit_log (2 indexes), events (the insert workload's table) and the marker
table meta. Rows are loaded by parallel COPY ... FREEZE, then the indexes are built in
parallel sessions, then ANALYZE.

Re-runs are safe: the same spec on a ready schema does nothing; another spec needs
--force; an interrupted init is rebuilt; a schema called pgceiling that pgceiling did not
make is never touched. Nothing outside schema pgceiling is ever changed.

Without --dsn (or $PGCEILING_DSN) it fills a throwaway server, prints what it made and
removes the server: a way to see the sizes and the prefill speed on this machine.`

func runInit(ctx context.Context, env *Env, args []string) error {
	var c config.Init
	fs := newFlagSet(env, "init", initSynopsis)
	bindConn(fs, &c.Conn)
	c.Bind(fs)
	if err := parse(fs, args); err != nil {
		return err
	}
	if err := c.Validate(); err != nil {
		return config.Usagef("init: %v", err)
	}
	if err := checkDSN(c.Conn, env); err != nil {
		return err
	}
	t, err := openTarget(ctx, env, c.Conn, localpg.Options{})
	if err != nil {
		return err
	}
	defer t.Close()
	cfg, err := parseDSN(t.DSN)
	if err != nil {
		return err
	}
	cfg.RuntimeParams["application_name"] = "pgceiling-init"
	if cfg.ConnectTimeout == 0 {
		cfg.ConnectTimeout = 15 * time.Second
	}
	conn, err := connect(ctx, cfg)
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))

	spec := schema.Spec{Wallets: c.Wallets, Rows: c.Rows, Months: c.Months, Zipf: c.Zipf, Seed: c.Seed}
	bar := newProgressBar(env.Stderr, env.TTY)
	made, err := schema.Init(ctx, cfg, spec, schema.InitOptions{Workers: c.Workers, Force: c.Force, Progress: bar.update})
	bar.end()
	if err != nil {
		return initError(err, cfg)
	}
	where := fmt.Sprintf("database %q on %s:%d", cfg.Database, cfg.Host, cfg.Port)
	if made.AlreadyThere {
		fmt.Fprintf(env.Stdout, "schema pgceiling in %s is already initialised with this spec (%s): nothing to do (--force rebuilds it)\n", where, spec)
		return nil
	}
	verb := "created"
	if made.Rebuilt {
		verb = "rebuilt"
	}
	fmt.Fprintf(env.Stdout, "schema pgceiling %s in %s: %s\n", verb, where, spec)
	writeMade(env.Stdout, made)
	sizes, sb, err := schema.Sizes(ctx, conn)
	if err != nil {
		return err
	}
	writeSizes(env.Stdout, sizes, sb)
	if t.Embedded != nil {
		fmt.Fprintln(env.Stdout, "(the throwaway server is removed now: give --dsn to keep the schema)")
	}
	return nil
}

// writeMade prints what Init made and how long each phase took.
func writeMade(w io.Writer, m *schema.Made) {
	fmt.Fprintf(w, "  %s rows in transactions over %d partitions (%d months of history + %d ahead + default), %s in audit_log, %s wallets\n",
		inspectThousands(m.Rows), m.Partitions, m.Spec.Months, schema.MonthsAhead, inspectThousands(m.AuditRows), inspectThousands(int64(m.Wallets)))
	rate := func(d time.Duration) string {
		if d <= 0 {
			return "-"
		}
		return inspectThousands(int64(float64(m.Rows)/d.Seconds())) + " rows/s"
	}
	fmt.Fprintf(w, "  load %s (%s), indexes %s (%s), analyze %s, total %s (%s)\n",
		m.Load.Round(time.Millisecond), rate(m.Load), m.Index.Round(time.Millisecond), rate(m.Index),
		m.Analyze.Round(time.Millisecond), m.Total.Round(time.Millisecond), rate(m.Total))
}

// writeSizes prints the tables' sizes and their ratio to shared_buffers.
func writeSizes(w io.Writer, sizes []result.TableSize, sb int64) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "  table\trows\theap\tindexes\tindex size\t")
	var heap, idx int64
	for _, s := range sizes {
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%d\t%s\t\n", s.Name, inspectThousands(s.Rows), inspectBytes(s.HeapBytes), s.Indexes, inspectBytes(s.IndexBytes))
		heap += s.HeapBytes
		idx += s.IndexBytes
	}
	fmt.Fprintf(tw, "  total\t\t%s\t\t%s\t\n", inspectBytes(heap), inspectBytes(idx))
	tw.Flush()
	if sb > 0 {
		fmt.Fprintf(w, "  shared_buffers %s: heap %.2fx, indexes %.2fx, heap+indexes %.2fx\n", inspectBytes(sb),
			float64(heap)/float64(sb), float64(idx)/float64(sb), float64(heap+idx)/float64(sb))
	}
}

// embeddedOptions reads $PGCEILING_PG_BINDIR for the embedded server.
func embeddedOptions(env *Env) (localpg.Options, error) {
	var opt localpg.Options
	dir := env.Getenv(EnvPGBinDir)
	if dir == "" {
		return opt, nil
	}
	for _, b := range []string{"postgres", "initdb", "pg_ctl"} {
		if st, err := os.Stat(filepath.Join(dir, b)); err != nil || st.IsDir() {
			return opt, fmt.Errorf("no PostgreSQL server binaries in %s=%s (need postgres, initdb and pg_ctl there): install them, e.g. `apt-get install -y postgresql`, fix %s, or pass --dsn to use an existing server",
				EnvPGBinDir, dir, EnvPGBinDir)
		}
	}
	opt.BinDir = dir
	return opt, nil
}

// parseDSN parses --dsn; a malformed one is a usage error (its password never shown).
func parseDSN(dsn string) (*pgx.ConnConfig, error) {
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		// pgconn's message repeats the DSN (redacted); keep only the reason.
		msg := err.Error()
		if i := strings.LastIndex(msg, "`: "); i >= 0 {
			msg = msg[i+3:]
		}
		return nil, config.Usagef("malformed --dsn %q: %s (want postgres://user:password@host:port/database or host=... dbname=...)", config.RedactDSN(dsn), msg)
	}
	return cfg, nil
}

// connect opens a session and turns the usual failures into one clear line.
func connect(ctx context.Context, cfg *pgx.ConnConfig) (*pgx.Conn, error) {
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return nil, connectError(err, cfg)
	}
	return conn, nil
}

// connectError explains why a connection failed, in the terms a newcomer needs.
func connectError(err error, cfg *pgx.ConnConfig) error {
	addr := fmt.Sprintf("%s:%d", cfg.Host, cfg.Port)
	if strings.HasPrefix(cfg.Host, "/") {
		addr = fmt.Sprintf("socket %s (port %d)", cfg.Host, cfg.Port)
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch pgErr.Code {
		case "28P01":
			return fmt.Errorf("wrong password for user %q on %s: check the password in --dsn or $PGPASSWORD", cfg.User, addr)
		case "28000":
			return fmt.Errorf("the server at %s refuses user %q for database %q: %s (check pg_hba.conf or the user name)", addr, cfg.User, cfg.Database, pgErr.Message)
		case "3D000":
			return fmt.Errorf("database %q does not exist on %s: create it (`createdb %s`) or name another in --dsn", cfg.Database, addr, cfg.Database)
		case "53300":
			return fmt.Errorf("the server at %s has no free connection slots (too many connections)", addr)
		}
		return fmt.Errorf("connect to %s as %q: %s (SQLSTATE %s)", addr, cfg.User, pgErr.Message, pgErr.Code)
	}
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		return fmt.Errorf("cannot reach PostgreSQL at %s: connection refused (is the server running and listening there?)", addr)
	case errors.Is(err, context.DeadlineExceeded) || isTimeout(err):
		return fmt.Errorf("cannot reach PostgreSQL at %s: no answer within %s (host down, wrong address or a firewall?)", addr, cfg.ConnectTimeout)
	case errors.Is(err, context.Canceled):
		return err
	}
	var dnsErr *net.DNSError
	if errors.As(err, &dnsErr) {
		return fmt.Errorf("cannot reach PostgreSQL at %s: unknown host %q", addr, dnsErr.Name)
	}
	var opErr *net.OpError
	if errors.As(err, &opErr) {
		return fmt.Errorf("cannot reach PostgreSQL at %s: %v", addr, opErr.Err)
	}
	return fmt.Errorf("connect to %s: %v", addr, err)
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// initError explains Init's failures; the schema package's own errors are already clear.
func initError(err error, cfg *pgx.ConnConfig) error {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "42501" {
		return fmt.Errorf("user %q may not create schema pgceiling in database %q (%s): run `GRANT CREATE ON DATABASE %s TO %s` as its owner, or connect as a user who may",
			cfg.User, cfg.Database, pgErr.Message, cfg.Database, cfg.User)
	}
	if errors.As(err, &pgErr) || errors.Is(err, context.Canceled) {
		return fmt.Errorf("init: %w", err)
	}
	var ce *pgconn.ConnectError
	if errors.As(err, &ce) {
		return connectError(err, cfg)
	}
	return err
}

// progressBar draws Init's progress on stderr: redrawn in place with \r on a terminal,
// a plain line every few seconds (and at each phase) otherwise.
type progressBar struct {
	w     io.Writer
	tty   bool
	phase string
	last  time.Time
	drawn bool
}

func newProgressBar(w io.Writer, tty bool) *progressBar { return &progressBar{w: w, tty: tty} }

func (b *progressBar) update(p schema.Progress) {
	if p.Phase == schema.PhaseSchema {
		return // too short to show; an error in it is printed on its own
	}
	changed := p.Phase != b.phase
	if changed && b.drawn && b.tty {
		fmt.Fprintln(b.w)
	}
	b.phase = p.Phase
	if !b.tty && !changed && time.Since(b.last) < 5*time.Second {
		return
	}
	b.last = time.Now()
	var line string
	switch p.Phase {
	case schema.PhaseLoad:
		line = fmt.Sprintf("init: load %s / %s rows (%.0f%%), %s rows/s, ETA %s", inspectThousands(p.Done), inspectThousands(p.Total),
			100*float64(p.Done)/float64(max(p.Total, 1)), inspectThousands(int64(p.Rate)), eta(p))
	case schema.PhaseIndex:
		line = fmt.Sprintf("init: indexes %d / %d built, ETA %s", p.Done, p.Total, eta(p))
	case schema.PhaseDone:
		line = fmt.Sprintf("init: done in %s", p.Elapsed.Round(100*time.Millisecond))
	default:
		line = fmt.Sprintf("init: %s", p.Phase)
	}
	if b.tty {
		fmt.Fprintf(b.w, "\r\033[K%s", line)
		b.drawn = true
	} else {
		fmt.Fprintln(b.w, line)
	}
}

func eta(p schema.Progress) string {
	if p.ETA <= 0 {
		return "-"
	}
	return p.ETA.Round(time.Second).String()
}

// end finishes the line a terminal bar was drawing.
func (b *progressBar) end() {
	if b.tty && b.drawn {
		fmt.Fprintln(b.w)
		b.drawn = false
	}
}
