package responder

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgproto3"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/pgceiling/pgceiling/driver"
	"github.com/pgceiling/pgceiling/observe"
	"github.com/pgceiling/pgceiling/result"
	"github.com/pgceiling/pgceiling/schema"
	"github.com/pgceiling/pgceiling/workload"
)

// envServe makes the test binary a responder process (TestDriverProbe): the loop engine
// blocks its only P in epoll_wait, so a responder in the same process would answer only
// when the loop yields (every 10 ms).
const envServe = "PGCEILING_TEST_RESPONDER_SERVE"

func TestMain(m *testing.M) {
	if os.Getenv(envServe) == "" {
		os.Exit(m.Run())
	}
	s, err := Listen("127.0.0.1:0", Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Println(s.DSN())
	go func() { // serve until the parent closes stdin
		_, _ = io.Copy(io.Discard, os.Stdin)
		s.Close()
	}()
	if err := s.Serve(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Exit(0)
}

// startProcess runs a responder in a child process and returns its DSN.
func startProcess(t *testing.T) string {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), envServe+"=1")
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start the responder process: %v", err)
	}
	t.Cleanup(func() {
		stdin.Close()
		if err := cmd.Wait(); err != nil {
			t.Errorf("responder process: %v", err)
		}
	})
	dsn, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatalf("read the responder's DSN: %v", err)
	}
	return strings.TrimSpace(dsn)
}

// start serves a fresh responder for the test and stops it at the end.
func start(t testing.TB) *Server {
	t.Helper()
	s, err := Listen("127.0.0.1:0", Options{})
	if err != nil {
		t.Fatalf("Listen: %v", err)
	}
	done := make(chan error, 1)
	go func() { done <- s.Serve() }()
	t.Cleanup(func() {
		s.Close()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return s
}

func connect(t *testing.T, s *Server, mode pgx.QueryExecMode) *pgx.Conn {
	t.Helper()
	cfg, err := pgx.ParseConfig(s.DSN())
	if err != nil {
		t.Fatalf("ParseConfig(%q): %v", s.DSN(), err)
	}
	cfg.DefaultQueryExecMode = mode
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		t.Fatalf("connect to the responder: %v", err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

var execModes = map[string]pgx.QueryExecMode{
	"cache_statement": pgx.QueryExecModeCacheStatement, "cache_describe": pgx.QueryExecModeCacheDescribe,
	"describe_exec": pgx.QueryExecModeDescribeExec, "exec": pgx.QueryExecModeExec,
	"simple_protocol": pgx.QueryExecModeSimpleProtocol,
}

// TestPgxQueries: pgx gets the canned answers in every query exec mode, simple and
// extended protocol, binary and text results; BEGIN/COMMIT/ROLLBACK move the transaction
// status, and only committed inserts count.
func TestPgxQueries(t *testing.T) {
	s := start(t)
	ctx := context.Background()
	for name, mode := range execModes {
		t.Run(name, func(t *testing.T) {
			conn := connect(t, s, mode)
			if v := conn.PgConn().ParameterStatus("server_version"); v != ServerVersion {
				t.Errorf("server_version = %q, want %q", v, ServerVersion)
			}
			var recent int64
			sql := `SELECT count(*) AS recent FROM (SELECT 1 FROM pgceiling.transactions WHERE wallet_id = $1::bigint AND created_at > now() - $2::interval ORDER BY created_at DESC LIMIT $3::bigint) AS w`
			if err := conn.QueryRow(ctx, sql, int64(7), "3600 s", int64(20)).Scan(&recent); err != nil || recent != 3 {
				t.Errorf("fraud check: %d, %v; want 3, nil", recent, err)
			}
			var bal pgtype.Numeric
			var status string
			if err := conn.QueryRow(ctx, `SELECT balance, status FROM pgceiling.wallets WHERE account_id = $1::bigint`, int64(1)).Scan(&bal, &status); err != nil {
				t.Fatalf("read wallet: %v", err)
			}
			if f, _ := bal.Float64Value(); f.Float64 != 1000 || status != "active" {
				t.Errorf("read wallet = %v, %q; want 1000, active", f.Float64, status)
			}

			before := s.Committed(Transactions)
			tx, err := conn.Begin(ctx)
			if err != nil {
				t.Fatalf("begin: %v", err)
			}
			if st := conn.PgConn().TxStatus(); st != 'T' {
				t.Errorf("status after BEGIN = %q, want T", st)
			}
			var id1, id2 int64
			ins := `INSERT INTO pgceiling.transactions (id, wallet_id, amount) VALUES (nextval('pgceiling.transactions_id_seq'), $1::bigint, $2::bigint / 100.0) RETURNING id`
			if err := tx.QueryRow(ctx, ins, int64(1), int64(250)).Scan(&id1); err != nil {
				t.Fatalf("insert returning id: %v", err)
			}
			if err := tx.QueryRow(ctx, ins, int64(1), int64(250)).Scan(&id2); err != nil || id2 <= id1 {
				t.Errorf("second id = %d, %v; want > %d", id2, err, id1)
			}
			tag, err := tx.Exec(ctx, `INSERT INTO pgceiling.audit_log (tx_id, wallet_id) VALUES ($1::bigint, $2::bigint)`, id1, int64(1))
			if err != nil || tag.String() != "INSERT 0 1" {
				t.Errorf("insert audit row: %q, %v; want INSERT 0 1", tag, err)
			}
			tag, err = tx.Exec(ctx, `UPDATE pgceiling.wallets SET balance = balance - $2::bigint / 100.0 WHERE account_id = $1::bigint`, int64(1), int64(5))
			if err != nil || tag.RowsAffected() != 1 {
				t.Errorf("update: %q, %v; want UPDATE 1", tag, err)
			}
			if got := s.Committed(Transactions); got != before {
				t.Errorf("rows counted before COMMIT: %d, want %d", got, before)
			}
			if err := tx.Commit(ctx); err != nil {
				t.Fatalf("commit: %v", err)
			}
			if st := conn.PgConn().TxStatus(); st != 'I' {
				t.Errorf("status after COMMIT = %q, want I", st)
			}
			if got := s.Committed(Transactions); got != before+2 {
				t.Errorf("rows counted after COMMIT: %d, want %d", got, before+2)
			}

			tx, err = conn.Begin(ctx)
			if err != nil {
				t.Fatalf("begin: %v", err)
			}
			if _, err := tx.Exec(ctx, ins, int64(1), int64(1)); err != nil {
				t.Fatalf("insert: %v", err)
			}
			if err := tx.Rollback(ctx); err != nil {
				t.Fatalf("rollback: %v", err)
			}
			if got := s.Committed(Transactions); got != before+2 {
				t.Errorf("rows counted after ROLLBACK: %d, want %d", got, before+2)
			}
		})
	}
}

// TestSimpleQueryMany: several statements in one simple Query, an empty query, and an
// unknown statement answered by its fallback.
func TestSimpleQueryMany(t *testing.T) {
	s := start(t)
	conn := connect(t, s, pgx.QueryExecModeSimpleProtocol)
	ctx := context.Background()
	res, err := conn.PgConn().Exec(ctx, `BEGIN; SET LOCAL synchronous_commit TO on; SELECT balance FROM pgceiling.wallets WHERE account_id = 3 FOR UPDATE; COMMIT`).ReadAll()
	if err != nil {
		t.Fatalf("multi-statement query: %v", err)
	}
	var tags []string
	for _, r := range res {
		tags = append(tags, r.CommandTag.String())
	}
	if want := "[BEGIN SET SELECT 1 COMMIT]"; fmtSlice(tags) != want {
		t.Errorf("tags = %v, want %s", tags, want)
	}
	fb := s.Stats().Fallbacks.Load()
	for _, sql := range []string{"", "-- ping", " ; "} {
		if _, err := conn.Exec(ctx, sql); err != nil {
			t.Errorf("empty query %q: %v", sql, err)
		}
	}
	if err := conn.Ping(ctx); err != nil {
		t.Errorf("ping: %v", err)
	}
	tag, err := conn.Exec(ctx, "VACUUM ANALYZE pgceiling.wallets")
	if err != nil || tag.String() != "VACUUM" || s.Stats().Fallbacks.Load() != fb+1 {
		t.Errorf("unknown statement: %q, %v, fallbacks %d; want VACUUM, nil, %d", tag, err, s.Stats().Fallbacks.Load(), fb+1)
	}
}

func fmtSlice(s []string) string {
	var b bytes.Buffer
	b.WriteByte('[')
	for i, x := range s {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(x)
	}
	b.WriteByte(']')
	return b.String()
}

// TestWorkloadStatementsCanned: every statement of every workload has a canned reply
// (none falls back), so a change in workload/*.go that the responder does not know
// fails here, not in a benchmark.
func TestWorkloadStatementsCanned(t *testing.T) {
	s, err := Listen("127.0.0.1:0", Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, name := range scriptWorkloads() {
		for _, limit := range []int64{0, 20} {
			w, err := workload.New(name, workload.Params{Wallets: 100, FraudLimit: limit})
			if err != nil {
				t.Fatalf("workload.New(%q): %v", name, err)
			}
			if _, ok := w.(workload.Copier); ok {
				continue // the responder answers no COPY: copy's batches are not canned
			}
			sc, ok := w.(workload.Script)
			if !ok {
				t.Fatalf("workload %q is not a script", name)
			}
			for _, st := range append(sc.Statements(), workload.Statement{Name: "set", SQL: sc.SetSync()}) {
				if r := s.lookup([]byte(st.SQL)); r.fallback {
					t.Errorf("%s %q: no canned reply for %s", name, st.Name, st.SQL)
				}
			}
		}
	}
}

// TestPgceilingSetUp: what `pgceiling run --dsn` asks before and after a probe gets
// answers its own code accepts: the schema check, the disclosure, the baseline, the row
// counter.
func TestPgceilingSetUp(t *testing.T) {
	s := start(t)
	conn := connect(t, s, pgx.QueryExecModeCacheStatement)
	ctx := context.Background()
	spec, err := schema.Check(ctx, conn)
	if err != nil || spec.Wallets != 10_000 {
		t.Fatalf("schema.Check = %+v, %v; want 10000 wallets", spec, err)
	}
	d, err := observe.Disclose(ctx, conn, observe.LocalInfo{})
	if err != nil {
		t.Fatalf("observe.Disclose: %v", err)
	}
	if d.Version != ServerVersion || d.Settings["fsync"] != "on" || len(d.Tables) != 4 || d.ServerLocal {
		t.Errorf("disclosure: version %q, fsync %q, %d tables, local %v; want %s, on, 4, false",
			d.Version, d.Settings["fsync"], len(d.Tables), d.ServerLocal, ServerVersion)
	}
	if w := observe.Unsafe(d, true); len(w) > 0 {
		t.Errorf("the responder looks unsafe: %v", w)
	}
	b, err := schema.TakeBaseline(ctx, conn)
	if err != nil {
		t.Fatalf("schema.TakeBaseline: %v", err)
	}
	count := schema.Counter(conn, b)
	for _, table := range []string{"transactions", "audit_log", "events"} {
		if _, err := count(ctx, table); err != nil {
			t.Errorf("count %s: %v", table, err)
		}
	}
}

// TestDriverProbe: one short probe of each workload with each engine, through the
// driver as `pgceiling run` calls it (its pool, the responder's row counter), commits
// every arrival and passes the books and the row check.
func TestDriverProbe(t *testing.T) {
	dsn := startProcess(t)
	ctx := context.Background()
	for _, engine := range []string{"loop", "pgx"} {
		for _, name := range scriptWorkloads() {
			t.Run(engine+"/"+name, func(t *testing.T) {
				if engine == "loop" && runtime.GOOS != "linux" {
					t.Fatalf("the loop engine needs Linux")
				}
				pool, err := driver.NewPool(ctx, dsn, driver.Session{AppName: "pgceiling"}, 4, pgx.QueryExecModeCacheStatement)
				if err != nil {
					t.Fatalf("driver.NewPool: %v", err)
				}
				defer pool.Close()
				w, err := workload.New(name, workload.Params{Wallets: 10_000, Zipf: 1, SyncCommit: true})
				if err != nil {
					t.Fatal(err)
				}
				b, err := schema.TakeBaseline(ctx, pool)
				if err != nil {
					t.Fatal(err)
				}
				p, err := driver.Run(ctx, pool, w, driver.Config{Rate: 400, Duration: 500 * time.Millisecond, Conns: 4,
					Engine: result.Engine(engine), Seed: 1, CountRows: schema.Counter(pool, b)})
				if err != nil {
					t.Fatalf("driver.Run: %v", err)
				}
				if p.Committed == 0 || p.Committed != p.Scheduled || len(p.Checks.Problems) > 0 || string(p.Engine) != engine {
					t.Errorf("probe: engine %s, scheduled %d, committed %d, failed %v, rejected %d, problems %v, service %+v",
						p.Engine, p.Scheduled, p.Committed, p.Failed, p.Rejected, p.Checks.Problems, p.Service)
				}
			})
		}
	}
}

// TestPgbench: pgbench runs bench/pgbench/*.sql against the responder without errors.
func TestPgbench(t *testing.T) {
	bin, err := exec.LookPath("pgbench")
	if err != nil {
		bin = "/usr/lib/postgresql/15/bin/pgbench"
		if _, err := os.Stat(bin); err != nil {
			t.Fatalf("pgbench is needed (not in PATH nor %s): install postgresql-client", bin)
		}
	}
	s := start(t)
	for _, script := range []string{"oltp.sql", "transfer.sql"} {
		before := s.Stats().Commits.Load()
		secs := "2"
		if script != "oltp.sql" {
			secs = "1"
		}
		out, err := exec.Command(bin, "-n", "-M", "prepared", "-c", "4", "-T", secs,
			"-f", filepath.Join("..", "..", "bench", "pgbench", script), s.DSN()).CombinedOutput()
		if err != nil {
			t.Fatalf("pgbench %s: %v\n%s", script, err, out)
		}
		m := regexp.MustCompile(`number of transactions actually processed: (\d+)`).FindSubmatch(out)
		if m == nil {
			t.Fatalf("pgbench %s: no transaction count in its output:\n%s", script, out)
		}
		n, _ := strconv.ParseInt(string(m[1]), 10, 64)
		if n == 0 || s.Stats().Commits.Load()-before < n {
			t.Errorf("pgbench %s: %d transactions, %d commits seen", script, n, s.Stats().Commits.Load()-before)
		}
		if bytes.Contains(out, []byte("number of failed transactions: ")) && !bytes.Contains(out, []byte("number of failed transactions: 0 ")) {
			t.Errorf("pgbench %s failed transactions:\n%s", script, out)
		}
	}
}

// TestDecodeBind: decodeBind reads what pgproto3 encodes, as pgproto3 decodes it.
func TestDecodeBind(t *testing.T) {
	for _, b := range []pgproto3.Bind{
		{},
		{PreparedStatement: "stmtcache_1", ResultFormatCodes: []int16{1}},
		{DestinationPortal: "p", PreparedStatement: "s", ParameterFormatCodes: []int16{0, 1},
			Parameters: [][]byte{[]byte("12"), nil, {0, 0, 0, 0, 0, 0, 0, 7}}, ResultFormatCodes: []int16{1, 0, 1}},
		{Parameters: [][]byte{[]byte("")}},
	} {
		enc, err := b.Encode(nil)
		if err != nil {
			t.Fatal(err)
		}
		var want pgproto3.Bind
		if err := want.Decode(enc[5:]); err != nil {
			t.Fatal(err)
		}
		var got bindMsg
		if err := decodeBind(enc[5:], &got); err != nil {
			t.Fatalf("decodeBind(%+v): %v", b, err)
		}
		if string(got.stmt) != want.PreparedStatement || fmtInts(got.formats) != fmtInts(want.ResultFormatCodes) {
			t.Errorf("decodeBind(%+v) = %q %v, want %q %v", b, got.stmt, got.formats, want.PreparedStatement, want.ResultFormatCodes)
		}
		for cut := 0; cut < len(enc)-5; cut++ {
			if err := decodeBind(enc[5:5+cut], &got); err == nil {
				t.Errorf("decodeBind(%+v cut at %d) accepted a truncated message", b, cut)
			}
		}
	}
}

func fmtInts(v []int16) string {
	var b []byte
	for _, x := range v {
		b = strconv.AppendInt(append(b, ' '), int64(x), 10)
	}
	return string(b)
}

// TestParamTypes: parameter types come from the casts; uncast ones are text unless
// overridden.
func TestParamTypes(t *testing.T) {
	for _, c := range []struct {
		sql  string
		over []uint32
		want string
	}{
		{`SELECT $1::bigint, $2::interval, $3::bigint`, nil, " 20 1186 20"},
		{`VALUES ($2::text, $1::uuid, $1::uuid)`, nil, " 2950 25"},
		{`WHERE id > $1`, []uint32{pgtype.Int8OID}, " 20"},
		{`WHERE name = ANY($1)`, nil, " 25"},
		{`SELECT 1`, nil, ""},
	} {
		var got []byte
		for _, o := range paramTypes(c.sql, c.over) {
			got = strconv.AppendUint(append(got, ' '), uint64(o), 10)
		}
		if string(got) != c.want {
			t.Errorf("paramTypes(%q, %v) = %q, want %q", c.sql, c.over, got, c.want)
		}
	}
}

// nopConn is a net.Conn that discards what is written.
type nopConn struct{ net.Conn }

func (nopConn) Write(b []byte) (int, error) { return len(b), nil }

// TestHotPathAllocs: a prepared statement's Bind / Execute / Sync and the simple
// BEGIN / SET / COMMIT allocate nothing once the connection is warm.
func TestHotPathAllocs(t *testing.T) {
	s, err := Listen("127.0.0.1:0", Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	c := &conn{s: s, nc: nopConn{}, r: bufio.NewReader(bytes.NewReader(nil)), stmts: map[string]*prepared{}, status: 'I',
		appReady: new(atomic.Int64)}
	msg := func(m pgproto3.FrontendMessage) []byte {
		b, err := m.Encode(nil)
		if err != nil {
			t.Fatal(err)
		}
		return b[5:]
	}
	parse := msg(&pgproto3.Parse{Name: "s1", Query: `INSERT INTO pgceiling.transactions (id) VALUES ($1::bigint) RETURNING id`})
	bind := msg(&pgproto3.Bind{PreparedStatement: "s1", Parameters: [][]byte{[]byte("5")}, ResultFormatCodes: []int16{1}})
	exec := msg(&pgproto3.Execute{})
	begin, set, commit := msg(&pgproto3.Query{String: "BEGIN"}), msg(&pgproto3.Query{String: "SET LOCAL synchronous_commit TO on"}), msg(&pgproto3.Query{String: "COMMIT"})
	if err := c.handle('P', parse); err != nil {
		t.Fatal(err)
	}
	round := func() {
		for _, m := range []struct {
			typ  byte
			body []byte
		}{{'Q', begin}, {'Q', set}, {'B', bind}, {'E', exec}, {'S', nil}, {'Q', commit}} {
			if err := c.handle(m.typ, m.body); err != nil {
				t.Fatal(err)
			}
		}
	}
	round()
	if n := testing.AllocsPerRun(200, round); n != 0 {
		t.Errorf("a transaction's messages allocate %v times, want 0", n)
	}
	if got := s.Committed(Transactions); got < 200 {
		t.Errorf("committed inserts = %d, want >= 200", got)
	}
}

// scriptWorkloads are the built-in workloads the responder can answer: every one but copy,
// whose COPY sub-protocol the responder does not speak (it is tested against the real
// server in the driver's tests).
func scriptWorkloads() []string {
	var out []string
	for _, n := range workload.Names() {
		if n != "copy" {
			out = append(out, n)
		}
	}
	return out
}
