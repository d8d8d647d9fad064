package main

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pgceiling/pgceiling/internal/pgtest"
	"github.com/pgceiling/pgceiling/result"
	"github.com/pgceiling/pgceiling/schema"
)

// runDB returns a fresh test database with a small initialised pgceiling schema.
func runDB(t *testing.T) string {
	t.Helper()
	dsn := pgtest.NewDatabase(t)
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	spec := schema.DefaultSpec()
	spec.Rows, spec.Wallets, spec.Months = 5000, 200, 2
	if _, err := schema.Init(context.Background(), cfg, spec, schema.InitOptions{Workers: 1}); err != nil {
		t.Fatalf("schema.Init: %v", err)
	}
	return dsn
}

func readRun(t *testing.T, path string) *result.Probe {
	t.Helper()
	f, err := result.Read(path)
	if err != nil {
		t.Fatalf("read the run's JSON: %v", err)
	}
	if f.Command != "run" || len(f.Sweeps) != 1 || len(f.Sweeps[0].Probes) != 1 || f.Server == nil {
		t.Fatalf("results file: command %q, %d sweeps, server %v: want one run probe with a disclosure", f.Command, len(f.Sweeps), f.Server)
	}
	return &f.Sweeps[0].Probes[0]
}

func TestRunBadInput(t *testing.T) {
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"run"}, 2, "--rate is required"},
		{[]string{"run", "--rate", "NaN"}, 2, "finite"},
		{[]string{"run", "--rate", "10", "--workload", "tranfser"}, 2, `did you mean "transfer"`},
		{[]string{"run", "--rate", "10", "--exec-mode", "prepared"}, 2, "--exec-mode"},
		{[]string{"run", "--rate", "10", "--conns", "0", "--sync-commit", "maybe"}, 2, "--conns must be between 1 and 10000, got 0; unknown --sync-commit"},
		{[]string{"run", "--rate", "10", "--json", "/nonexistent-dir-xyz/r.json"}, 1, "results file"},
		{[]string{"run", "--rate", "10", "--dsn", "postgres://u:s3cret@127.0.0.1:1/x?connect_timeout=5"}, 1, "connect"},
	} {
		_, stderr, code := cli(t, nil, tc.args...)
		if code != tc.code || !strings.Contains(stderr, tc.want) || strings.Contains(stderr, "s3cret") ||
			strings.Count(strings.TrimSpace(stderr), "\n") != 0 {
			t.Errorf("pgceiling %q: code %d, stderr %q; want code %d, one line with %q, no password", tc.args, code, stderr, tc.code, tc.want)
		}
	}
}

// TestRunTransfer runs transfer at high contention (Zipf 1.0 over 200 wallets, 50
// connections): the books balance and money is conserved.
func TestRunTransfer(t *testing.T) {
	dsn := runDB(t)
	path := filepath.Join(t.TempDir(), "run.json")
	stdout, stderr, code := cli(t, map[string]string{"PGCEILING_DSN": dsn}, "run", "--workload", "transfer",
		"--rate", "150", "--warmup", "500ms", "--duration", "2s", "--conns", "50", "--zipf", "1.0", "--json", path)
	if code != 0 {
		t.Fatalf("pgceiling run: code %d, stderr %q", code, stderr)
	}
	p := readRun(t, path)
	if !p.Balanced() || !p.Checks.RowsOK || p.Checks.BalanceOK == nil || !*p.Checks.BalanceOK || p.Committed == 0 {
		t.Errorf("run transfer: scheduled %d committed %d failed %v rejected %d checks %+v: want balanced books, rows and money conserved",
			p.Scheduled, p.Committed, p.Failed, p.Rejected, p.Checks)
	}
	if p.Workload != "transfer" || p.SyncCommit != "on" || p.TargetRate != 150 || p.Conns != 50 || p.Server.Version == "" || p.Observation == nil {
		t.Errorf("run transfer: probe %+v", p)
	}
	if !strings.Contains(stdout, "transfer") || !strings.Contains(stderr, "offered") {
		t.Errorf("run transfer: want a summary on stdout and progress on stderr; stdout:\n%s\nstderr:\n%s", stdout, stderr)
	}
}

func TestRunInterrupted(t *testing.T) {
	dsn := runDB(t)
	path := filepath.Join(t.TempDir(), "run.json")
	var out bytes.Buffer
	var errb lockedBuffer
	args := []string{"run", "--workload", "insert", "--rate", "50", "--warmup", "0s", "--duration", "1m", "--conns", "4",
		"--sync-commit", "off", "--json", path}
	e := &Env{Stdout: &out, Stderr: &errb, Getenv: func(k string) string {
		if k == "PGCEILING_DSN" {
			return dsn
		}
		return ""
	}, Args: append([]string{"pgceiling"}, args...)}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		// Interrupt once the probe is under way: its progress line is the event.
		for !strings.Contains(errb.String(), "pgceiling run:") {
			time.Sleep(50 * time.Millisecond)
		}
		// Let it measure something: wait until the probe has committed rows.
		conn, err := pgx.Connect(context.Background(), dsn)
		if err == nil {
			var n int64
			for n < 20 && conn.QueryRow(context.Background(), `SELECT count(*) FROM pgceiling.events`).Scan(&n) == nil {
				time.Sleep(50 * time.Millisecond)
			}
			conn.Close(context.Background())
		}
		e.signal.Store(int32(syscall.SIGINT))
		cancel()
	}()
	begin := time.Now()
	code := Main(ctx, e, args)
	if code != 130 || time.Since(begin) > 40*time.Second {
		t.Fatalf("pgceiling run interrupted: code %d after %v, stderr %q; want 130 promptly", code, time.Since(begin), errb.String())
	}
	p := readRun(t, path)
	if !p.Interrupted || !p.Balanced() || !p.Checks.RowsOK || p.MeasuredS >= 60 || p.SyncCommit != "off" {
		t.Errorf("interrupted run: interrupted %v balanced %v checks %+v measured %vs", p.Interrupted, p.Balanced(), p.Checks, p.MeasuredS)
	}
}

func TestRunEmbedded(t *testing.T) {
	path := filepath.Join(t.TempDir(), "run.json")
	_, stderr, code := cli(t, nil, "run", "--workload", "oltp", "--rate", "20", "--warmup", "0s", "--duration", "1s",
		"--conns", "4", "--rows", "2000", "--json", path)
	if code != 0 || !strings.Contains(stderr, "throwaway") || !strings.Contains(stderr, "initialising") {
		t.Fatalf("pgceiling run (embedded): code %d, stderr %q", code, stderr)
	}
	p := readRun(t, path)
	if !p.Balanced() || !p.Checks.RowsOK || p.Committed == 0 {
		t.Errorf("embedded run: %+v", p)
	}
}

// lockedBuffer is a bytes.Buffer safe to read while the command writes to it.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
