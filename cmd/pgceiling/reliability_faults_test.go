package main

// Server faults during a probe and a search (issue 6 item 1), each on a server of the
// test's own so it can be restarted, stopped or limited.

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pgceiling/pgceiling/localpg"
	"github.com/pgceiling/pgceiling/result"
)

// relServer starts a relThrowaway server for one test and removes it when the test ends.
func relServer(t *testing.T, opt localpg.Options) *localpg.Server {
	t.Helper()
	if opt.SharedBuffers == "" {
		opt.SharedBuffers = "128MB"
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	s, err := localpg.Start(ctx, opt)
	if err != nil {
		t.Fatalf("test needs its own PostgreSQL server, but it could not be started: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Stop(); err != nil {
			t.Errorf("stop own server: %v", err)
		}
	})
	return s
}

// relWaitUntil polls the database until query returns true (the event the test waits for),
// failing the test after timeout. Connection errors are retried: the server may be
// restarting.
func relWaitUntil(t *testing.T, dsn, what, query string, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	ctx := context.Background()
	var last error
	for time.Now().Before(deadline) {
		conn, err := pgx.Connect(ctx, dsn)
		if err == nil {
			var ok bool
			err = conn.QueryRow(ctx, query).Scan(&ok)
			conn.Close(ctx)
			if err == nil && ok {
				return
			}
		}
		last = err
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("waited %v for %s; never happened (last error: %v)", timeout, what, last)
}

// relAsyncCLI runs a command line in the background; the returned function waits for it.
// If the test ends first, its cleanup still waits, so no command outlives its test.
func relAsyncCLI(t *testing.T, env map[string]string, args ...string) func() (string, string, int) {
	t.Helper()
	type res struct {
		out, err string
		code     int
	}
	done := make(chan res, 1)
	go func() {
		var out bytes.Buffer
		var errb lockedBuffer
		e := &Env{Stdout: &out, Stderr: &errb, Getenv: func(k string) string { return env[k] },
			Args: append([]string{"pgceiling"}, args...)}
		code := Main(context.Background(), e, args)
		done <- res{out.String(), errb.String(), code}
	}()
	var r *res
	wait := func() *res {
		if r == nil {
			select {
			case got := <-done:
				r = &got
			case <-time.After(2 * time.Minute):
				r = &res{code: -1, err: "did not end within 2 minutes"}
			}
		}
		return r
	}
	t.Cleanup(func() { wait() })
	return func() (string, string, int) {
		r := wait()
		if r.code == -1 {
			t.Fatalf("pgceiling %q did not end within 2 minutes", args)
		}
		return r.out, r.err, r.code
	}
}

// rowsAfter is a waitUntil query: at least n more rows in pgceiling.events than now.
func rowsAfter(t *testing.T, dsn string, n int64) string {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	defer conn.Close(ctx)
	var now int64
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM pgceiling.events").Scan(&now); err != nil {
		t.Fatalf("count events: %v", err)
	}
	return fmt.Sprintf("SELECT count(*) >= %d FROM pgceiling.events", now+n)
}

func relReadProbe(t *testing.T, path string) (*result.File, *result.Probe) {
	t.Helper()
	f, err := result.Read(path)
	if err != nil {
		t.Fatalf("the result must be on disk: %v", err)
	}
	if len(f.Sweeps) != 1 || len(f.Sweeps[0].Probes) != 1 {
		t.Fatalf("results file %s: %d sweeps; want one probe", path, len(f.Sweeps))
	}
	return f, &f.Sweeps[0].Probes[0]
}

// TestReliabilityFaults: a restart mid-probe, a terminated backend and a cancelled query,
// and a max_connections below --conns, on one server of the test's own.
func TestReliabilityFaults(t *testing.T) {
	s := relServer(t, localpg.Options{MaxConnections: 16})
	dsn := s.DSN("postgres")
	initTiny(t, dsn)
	env := map[string]string{"PGCEILING_DSN": dsn}
	dir := t.TempDir()
	ctx := context.Background()

	t.Run("restart mid-probe", func(t *testing.T) {
		path := filepath.Join(dir, "restart.json")
		trigger := rowsAfter(t, dsn, 20)
		wait := relAsyncCLI(t, env, "run", "--workload", "insert", "--rate", "80", "--warmup", "0s", "--duration", "5s",
			"--conns", "4", "--sync-commit", "on", "--json", path)
		// The event: the probe has committed rows.
		relWaitUntil(t, dsn, "the probe to commit rows", trigger, 30*time.Second)
		if err := s.Restart(ctx); err != nil {
			t.Fatalf("restart the server mid-probe: %v", err)
		}
		_, stderr, code := wait()
		if code != 0 {
			t.Errorf("run through a restart: exit %d, want 0; stderr:\n%s", code, stderr)
		}
		if strings.Contains(stderr, "goroutine ") || strings.Contains(stderr, "panic") {
			t.Errorf("run through a restart: stack trace on stderr:\n%s", stderr)
		}
		if _, err := os.Stat(path); err != nil {
			t.Fatalf("run through a restart wrote no result: %v", err)
		}
		_, p := relReadProbe(t, path)
		if !p.Balanced() {
			t.Errorf("restart: scheduled %d != committed %d + failed %d + rejected %d", p.Scheduled, p.Committed, p.Failed.Total(), p.Rejected)
		}
		if p.Failed[result.Connection] == 0 {
			t.Errorf("restart: no failure in class connection: failed %v", p.Failed)
		}
		// The pool reconnected: commits in the seconds after the restart.
		last := p.Series[len(p.Series)-1]
		if len(p.Series) < 3 || last.Committed == 0 {
			t.Errorf("restart: no commits in the last second (the pool did not reconnect?): series %+v", p.Series)
		}
	})

	t.Run("terminate and cancel", func(t *testing.T) {
		path := filepath.Join(dir, "kill.json")
		locker, err := pgx.Connect(ctx, dsn)
		if err != nil {
			t.Fatal(err)
		}
		defer locker.Close(ctx)
		tx, err := locker.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback(ctx)
		// Hold the events table against writes (SHARE: reads still pass) so the workers'
		// inserts wait on the lock: they are then certainly mid-statement when cancelled or
		// terminated.
		if _, err := tx.Exec(ctx, "LOCK TABLE pgceiling.events IN SHARE MODE"); err != nil {
			t.Fatal(err)
		}
		wait := relAsyncCLI(t, env, "run", "--workload", "insert", "--rate", "40", "--warmup", "0s", "--duration", "4s",
			"--conns", "4", "--lock-timeout", "0s", "--pool-wait", "10s", "--json", path)
		relWaitUntil(t, dsn, "two workers waiting on the lock", `SELECT count(*) >= 2 FROM pg_stat_activity
			WHERE application_name = 'pgceiling' AND wait_event_type = 'Lock'`, 30*time.Second)
		var cancelled, terminated bool
		err = locker.QueryRow(ctx, `SELECT pg_cancel_backend(pid) FROM pg_stat_activity
			WHERE application_name = 'pgceiling' AND wait_event_type = 'Lock' ORDER BY pid LIMIT 1`).Scan(&cancelled)
		if err != nil || !cancelled {
			t.Fatalf("pg_cancel_backend: %v %v", cancelled, err)
		}
		err = locker.QueryRow(ctx, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
			WHERE application_name = 'pgceiling' AND wait_event_type = 'Lock' ORDER BY pid DESC LIMIT 1`).Scan(&terminated)
		if err != nil || !terminated {
			t.Fatalf("pg_terminate_backend: %v %v", terminated, err)
		}
		if err := tx.Rollback(ctx); err != nil {
			t.Fatal(err)
		}
		_, stderr, code := wait()
		if code != 0 {
			t.Errorf("run with a cancelled query and a terminated backend: exit %d, stderr:\n%s", code, stderr)
		}
		_, p := relReadProbe(t, path)
		if !p.Balanced() || p.Committed == 0 {
			t.Errorf("terminate/cancel: scheduled %d committed %d failed %v rejected %d: want balanced books and commits after recovery",
				p.Scheduled, p.Committed, p.Failed, p.Rejected)
		}
		if p.Failed[result.StatementTimeout] == 0 {
			t.Errorf("the cancelled query (57014) is not counted: failed %v", p.Failed)
		}
		if p.Failed[result.Connection] == 0 {
			t.Errorf("the terminated backend (57P01) is not counted as connection: failed %v", p.Failed)
		}
	})

	t.Run("max_connections below --conns", func(t *testing.T) {
		path := filepath.Join(dir, "maxconn.json")
		before := dbChecksum(t, dsn)
		begin := time.Now()
		_, stderr, code := cli(t, env, "run", "--workload", "insert", "--rate", "40", "--warmup", "0s", "--duration", "2s",
			"--conns", "30", "--json", path)
		if code != 1 && code != 2 {
			t.Errorf("--conns 30 on max_connections 16: exit %d, want 1 or 2; stderr %q", code, stderr)
		}
		checkOneLine(t, "--conns 30 on max_connections 16", stderr)
		if !strings.Contains(stderr, "max_connections") || !strings.Contains(stderr, "--conns") {
			t.Errorf("--conns 30 on max_connections 16: the message should name max_connections and --conns: %q", stderr)
		}
		if d := time.Since(begin); d > 10*time.Second {
			t.Errorf("--conns 30 on max_connections 16: took %v, want a refusal before the probe", d)
		}
		if dbChecksum(t, dsn) != before {
			t.Errorf("--conns 30 on max_connections 16: the database changed (a probe ran?)")
		}
	})

	t.Run("--conns auto within max_connections 16", func(t *testing.T) {
		path := filepath.Join(dir, "auto.json")
		args := []string{"search", "--hold", "off", "--workload", "insert", "--sync-commit", "off", "--warmup", "0s",
			"--duration", "1s", "--precision", "0.9", "--repeats", "1", "--max-probes", "1", "--json", path}
		_, stderr, code := cli(t, env, args...)
		if code != 0 {
			t.Fatalf("search --conns auto on max_connections 16: exit %d; stderr:\n%s", code, stderr)
		}
		if !strings.Contains(stderr, "so the pool scan stops at") {
			t.Errorf("search --conns auto on max_connections 16 does not say the scan is capped:\n%s", stderr)
		}
		f, err := result.Read(path)
		if err != nil {
			t.Fatal(err)
		}
		ps := f.Sweeps[0].Pool
		if ps == nil || len(ps.Points) == 0 {
			t.Fatalf("no pool scan recorded: %+v", ps)
		}
		for _, pt := range ps.Points {
			if pt.Conns > 8 {
				t.Errorf("the scan tried %d connections on a server with room for at most 13", pt.Conns)
			}
		}

		// With six connections taken, the room left (13 - 6 - 4 of pgceiling's own) is
		// below the smallest pool the scan tries: one line that says what to do.
		for range 6 {
			c, err := pgx.Connect(ctx, dsn)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close(ctx)
		}
		_, stderr, code = cli(t, env, args...)
		if code == 0 {
			t.Errorf("search --conns auto with no room: exit 0, want a refusal; stderr:\n%s", stderr)
		}
		checkOneLine(t, "--conns auto with no room", stderr)
		if !strings.Contains(stderr, "--conns auto") || !strings.Contains(stderr, "--conns N") {
			t.Errorf("--conns auto with no room: the message should name --conns auto and --conns N: %q", stderr)
		}
	})

	t.Run("search through a restart", func(t *testing.T) {
		path := filepath.Join(dir, "search.json")
		trigger := rowsAfter(t, dsn, 20)
		wait := relAsyncCLI(t, env, "search", "--hold", "off", "--workload", "insert", "--sync-commit", "off", "--warmup", "0s", "--duration", "3s",
			"--start-rate", "40", "--growth", "4", "--precision", "0.9", "--max-probes", "3", "--conns", "4", "--json", path)
		relWaitUntil(t, dsn, "the first probe to commit rows", trigger, 30*time.Second)
		if err := s.Restart(ctx); err != nil {
			t.Fatalf("restart the server mid-search: %v", err)
		}
		_, stderr, code := wait()
		if code != 0 {
			t.Errorf("search through a restart: exit %d; stderr:\n%s", code, stderr)
		}
		f, err := result.Read(path)
		if err != nil {
			t.Fatalf("search through a restart: %v", err)
		}
		if len(f.Sweeps) != 1 || len(f.Sweeps[0].Probes) < 2 {
			t.Fatalf("search through a restart: %d sweeps; want the faulted probe and its retry", len(f.Sweeps))
		}
		ps := f.Sweeps[0].Probes
		if ps[0].Verdict != result.Fault || !ps[1].Retry || ps[1].TargetRate != ps[0].TargetRate {
			t.Errorf("search through a restart: probe 1 verdict %q (reason %q), probe 2 retry %v at %.0f (probe 1 at %.0f): want fault, then one retry at the same rate",
				ps[0].Verdict, ps[0].Reason, ps[1].Retry, ps[1].TargetRate, ps[0].TargetRate)
		}
		for i, p := range ps {
			t.Logf("probe %d: rate %.0f verdict %q reason %q retry %v error %q committed %d failed %v", i+1, p.TargetRate, p.Verdict, p.Reason, p.Retry, p.Error, p.Committed, p.Failed)
		}
		var faults int
		for _, p := range ps {
			if p.Verdict == result.Fault {
				faults++
			}
		}
		if faults != 1 {
			t.Errorf("search through one restart: %d probes judged fault, want 1", faults)
		}
	})
}

// TestReliabilityServerGone: the server stops for good mid-probe. The command ends within
// a bounded time with a clear message and the partial result on disk.
func TestReliabilityServerGone(t *testing.T) {
	s := relServer(t, localpg.Options{})
	dsn := s.DSN("postgres")
	initTiny(t, dsn)
	path := filepath.Join(t.TempDir(), "gone.json")
	env := map[string]string{"PGCEILING_DSN": dsn}
	wait := relAsyncCLI(t, env, "run", "--workload", "insert", "--rate", "60", "--warmup", "0s", "--duration", "25s",
		"--conns", "4", "--json", path)
	relWaitUntil(t, dsn, "the probe to commit rows", `SELECT count(*) >= 20 FROM pgceiling.events`, 30*time.Second)
	if err := s.Halt(context.Background()); err != nil {
		t.Fatalf("halt the server: %v", err)
	}
	halted := time.Now()
	_, stderr, code := wait()
	took := time.Since(halted)
	// Bound: the statement timeout (5 s) and pool wait (1 s) of what was in flight, and a
	// few seconds to conclude the server is gone, well before the 25 s window ends.
	if took > 15*time.Second {
		t.Errorf("server gone: the command ended %v after the server went away, want < 15s", took)
	}
	if code != 1 {
		t.Errorf("server gone: exit %d, want 1; stderr:\n%s", code, stderr)
	}
	lines := strings.Split(strings.TrimSpace(stderr), "\n")
	lastLine := lines[len(lines)-1]
	if !strings.Contains(lastLine, "server") && !strings.Contains(lastLine, "connect") {
		t.Errorf("server gone: the last line should say the server went away: %q", lastLine)
	}
	if strings.Contains(stderr, "goroutine ") || strings.Count(stderr, "connection refused") > 3 {
		t.Errorf("server gone: a stack trace or a wall of errors on stderr:\n%s", stderr)
	}
	_, p := relReadProbe(t, path)
	if p.Committed == 0 || !p.Balanced() || p.MeasuredS >= 25 || p.Error == "" && !p.Interrupted && !p.CutShort {
		t.Errorf("server gone: partial result: committed %d balanced %v measured %vs error %q cut %v",
			p.Committed, p.Balanced(), p.MeasuredS, p.Error, p.CutShort)
	}
	t.Logf("server gone: ended %v after the halt; %s", took.Round(time.Millisecond), fmt.Sprint(lastLine))
}
