package main

// Interruption (issue 6 item 2): SIGINT and SIGTERM to the real binary during init, run
// and search; kill -9 during a search; --resume after an interrupted search.

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pgceiling/pgceiling/internal/pgtest"
	"github.com/pgceiling/pgceiling/result"
)

// relBuildBinary builds the pgceiling binary into dir.
func relBuildBinary(t *testing.T, dir string) string {
	t.Helper()
	bin := filepath.Join(dir, "pgceiling")
	cmd := exec.Command("go", "build", "-o", bin, ".")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// relSharedTemp makes a temporary directory the postgres user can traverse (the embedded
// server is made inside it when the tests run as root).
func relSharedTemp(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "pgceiling-reliability-")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// relProc is a running pgceiling binary.
type relProc struct {
	cmd    *exec.Cmd
	stderr *lockedBuffer
	done   chan struct{}
	err    error
}

// relStartBinary starts the binary with TMPDIR=tmp and the extra environment.
func relStartBinary(t *testing.T, bin, tmp string, env map[string]string, args ...string) *relProc {
	t.Helper()
	cmd := exec.Command(bin, args...)
	var base []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "PGCEILING_DSN=") && !strings.HasPrefix(kv, "TMPDIR=") && !strings.HasPrefix(kv, "PGPASSWORD=") {
			base = append(base, kv)
		}
	}
	base = append(base, "TMPDIR="+tmp)
	for k, v := range env {
		base = append(base, k+"="+v)
	}
	cmd.Env = base
	p := &relProc{cmd: cmd, stderr: &lockedBuffer{}, done: make(chan struct{})}
	cmd.Stderr = p.stderr
	cmd.Stdout = &lockedBuffer{}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start pgceiling: %v", err)
	}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			_ = cmd.Process.Kill()
			<-p.done
		}
	})
	return p
}

// waitStderr waits until the process's stderr matches re, failing the test after timeout
// or when the process ends first.
func (p *relProc) waitStderr(t *testing.T, re *regexp.Regexp, timeout time.Duration) []string {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if m := re.FindStringSubmatch(p.stderr.String()); m != nil {
			return m
		}
		select {
		case <-p.done:
			t.Fatalf("pgceiling ended before %s appeared: %v; stderr:\n%s", re, p.err, p.stderr.String())
		case <-time.After(50 * time.Millisecond):
		}
	}
	t.Fatalf("waited %v for %s on stderr:\n%s", timeout, re, p.stderr.String())
	return nil
}

// signal sends sig and waits for the exit, returning the exit code and how long it took.
func (p *relProc) signal(t *testing.T, sig syscall.Signal) (int, time.Duration) {
	t.Helper()
	begin := time.Now()
	if err := p.cmd.Process.Signal(sig); err != nil {
		t.Fatalf("signal: %v", err)
	}
	select {
	case <-p.done:
	case <-time.After(60 * time.Second):
		t.Fatalf("pgceiling did not exit within 60s of %v; stderr:\n%s", sig, p.stderr.String())
	}
	return p.cmd.ProcessState.ExitCode(), time.Since(begin)
}

var relThrowaway = regexp.MustCompile(`throwaway PostgreSQL \S+ on ([0-9.]+):(\d+), data in (\S+)`)

// embedded waits for the embedded server's announcement and returns its DSN and dir.
func (p *relProc) embedded(t *testing.T) (dsn, dir string) {
	t.Helper()
	m := p.waitStderr(t, relThrowaway, 90*time.Second)
	return fmt.Sprintf("postgres://postgres@%s:%s/postgres?sslmode=disable", m[1], m[2]), m[3]
}

// postmasterPID reads the embedded server's postmaster pid from its data directory.
func postmasterPID(t *testing.T, dir string) int {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "data", "postmaster.pid"))
	if err != nil {
		t.Fatalf("embedded server's postmaster.pid: %v", err)
	}
	line, _, _ := strings.Cut(string(b), "\n")
	pid, _ := strconv.Atoi(strings.TrimSpace(line))
	return pid
}

// checkEmbeddedGone: no pgceiling-pg-* directory left in tmp, and the postmaster is gone.
func checkEmbeddedGone(t *testing.T, what, tmp string, pid int) {
	t.Helper()
	left, _ := filepath.Glob(filepath.Join(tmp, "pgceiling-pg-*"))
	if len(left) > 0 {
		t.Errorf("%s: the embedded server's directory is left behind: %v", what, left)
	}
	if pid > 0 && relRunning(pid) {
		t.Errorf("%s: the embedded server's postmaster (pid %d) still runs", what, pid)
	}
}

// relRunning reports whether the process exists and is not a zombie (the postmaster is
// reparented to PID 1, which in a container may never reap it).
func relRunning(pid int) bool {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return false
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// pid (comm) state ...: the state follows the last ')'.
	s := string(b)
	if i := strings.LastIndexByte(s, ')'); i >= 0 && i+2 < len(s) {
		return s[i+2] != 'Z'
	}
	return true
}

// relStopBudget is how long a command may take to stop after a signal: 2 s plus in-flight
// statements (at these tiny rates, well under a second) and removing an embedded server,
// with room for this busy machine.
const relStopBudget = 6 * time.Second

func TestReliabilitySignals(t *testing.T) {
	tmp := relSharedTemp(t)
	bin := relBuildBinary(t, tmp)

	t.Run("run embedded SIGINT", func(t *testing.T) {
		path := filepath.Join(tmp, "run-int.json")
		p := relStartBinary(t, bin, tmp, nil, "run", "--workload", "insert", "--rate", "50", "--warmup", "0s", "--duration", "60s",
			"--conns", "4", "--rows", "2000", "--json", path)
		dsn, dir := p.embedded(t)
		p.waitStderr(t, regexp.MustCompile(`pgceiling run: insert`), 90*time.Second)
		relWaitUntil(t, dsn, "the probe to commit rows", `SELECT count(*) >= 20 FROM pgceiling.events`, 30*time.Second)
		pid := postmasterPID(t, dir)
		code, took := p.signal(t, syscall.SIGINT)
		if code != 130 || took > relStopBudget {
			t.Errorf("run (embedded) SIGINT: exit %d after %v, want 130 within %v; stderr:\n%s", code, took, relStopBudget, p.stderr.String())
		}
		t.Logf("run SIGINT: stopped in %v", took.Round(time.Millisecond))
		f, pr := relReadProbe(t, path)
		if !f.Interrupted || !pr.Interrupted || pr.Committed == 0 || !pr.Balanced() || pr.MeasuredS >= 60 {
			t.Errorf("run SIGINT: file interrupted %v, probe interrupted %v committed %d balanced %v measured %vs",
				f.Interrupted, pr.Interrupted, pr.Committed, pr.Balanced(), pr.MeasuredS)
		}
		checkEmbeddedGone(t, "run SIGINT", tmp, pid)
	})

	t.Run("run SIGTERM", func(t *testing.T) {
		dsn := pgtest.NewDatabase(t)
		initTiny(t, dsn)
		path := filepath.Join(tmp, "run-term.json")
		trigger := rowsAfter(t, dsn, 20)
		p := relStartBinary(t, bin, tmp, map[string]string{"PGCEILING_DSN": dsn}, "run", "--workload", "insert", "--rate", "50",
			"--warmup", "0s", "--duration", "60s", "--conns", "4", "--json", path)
		relWaitUntil(t, dsn, "the probe to commit rows", trigger, 30*time.Second)
		code, took := p.signal(t, syscall.SIGTERM)
		if code != 143 || took > relStopBudget {
			t.Errorf("run SIGTERM: exit %d after %v, want 143 within %v; stderr:\n%s", code, took, relStopBudget, p.stderr.String())
		}
		f, pr := relReadProbe(t, path)
		if !f.Interrupted || pr.Committed == 0 || !pr.Balanced() {
			t.Errorf("run SIGTERM: interrupted %v committed %d balanced %v", f.Interrupted, pr.Committed, pr.Balanced())
		}
	})

	t.Run("init embedded SIGINT", func(t *testing.T) {
		p := relStartBinary(t, bin, tmp, nil, "init", "--rows", "5000000", "--wallets", "1000", "--workers", "1")
		dsn, dir := p.embedded(t)
		relWaitUntil(t, dsn, "init to start loading", `SELECT count(*) > 0 FROM pg_stat_activity WHERE query ILIKE 'COPY%'`, 60*time.Second)
		pid := postmasterPID(t, dir)
		code, took := p.signal(t, syscall.SIGINT)
		if code != 130 || took > relStopBudget {
			t.Errorf("init (embedded) SIGINT: exit %d after %v, want 130 within %v; stderr:\n%s", code, took, relStopBudget, p.stderr.String())
		}
		t.Logf("init SIGINT: stopped in %v", took.Round(time.Millisecond))
		checkEmbeddedGone(t, "init SIGINT", tmp, pid)
	})

	t.Run("init SIGTERM then init again", func(t *testing.T) {
		dsn := pgtest.NewDatabase(t)
		foreignObjects(t, dsn)
		want := foreignChecksum(t, dsn)
		env := map[string]string{"PGCEILING_DSN": dsn}
		p := relStartBinary(t, bin, tmp, env, "init", "--rows", "5000000", "--wallets", "1000", "--workers", "1")
		relWaitUntil(t, dsn, "init to start loading", `SELECT count(*) > 0 FROM pg_stat_activity WHERE query ILIKE 'COPY%'`, 60*time.Second)
		code, took := p.signal(t, syscall.SIGTERM)
		if code != 143 || took > relStopBudget {
			t.Errorf("init SIGTERM: exit %d after %v, want 143 within %v; stderr:\n%s", code, took, relStopBudget, p.stderr.String())
		}
		if foreignChecksum(t, dsn) != want {
			t.Errorf("an interrupted init changed other schemas")
		}
		// The interrupted schema is incomplete: run refuses it, init rebuilds it.
		_, stderr, code := cli(t, env, "run", "--rate", "10", "--duration", "1s")
		if code != 1 || !strings.Contains(stderr, "init") {
			t.Errorf("run on an interrupted init: exit %d, stderr %q; want 1 and advice to run init", code, stderr)
		}
		if _, stderr, code := cli(t, env, "init", "--rows", "2000", "--wallets", "50", "--months", "1", "--workers", "1"); code != 0 {
			t.Errorf("init after an interrupted init: exit %d, stderr %q", code, stderr)
		}
	})

	t.Run("search SIGINT, resume, kill -9", func(t *testing.T) {
		dsn := pgtest.NewDatabase(t)
		initTiny(t, dsn)
		env := map[string]string{"PGCEILING_DSN": dsn}
		path := filepath.Join(tmp, "search-int.json")
		args := []string{"search", "--hold", "off", "--workload", "insert", "--sync-commit", "off", "--warmup", "0s", "--duration", "2s",
			"--start-rate", "40", "--growth", "4", "--precision", "0.5", "--max-probes", "4", "--conns", "4"}
		p := relStartBinary(t, bin, tmp, env, append(args, "--json", path)...)
		done := relWaitProbes(t, p, path, 1)
		code, took := p.signal(t, syscall.SIGINT)
		if code != 130 || took > relStopBudget {
			t.Errorf("search SIGINT: exit %d after %v, want 130 within %v; stderr:\n%s", code, took, relStopBudget, p.stderr.String())
		}
		t.Logf("search SIGINT: stopped in %v", took.Round(time.Millisecond))
		f, err := result.Read(path)
		if err != nil {
			t.Fatalf("search SIGINT: %v", err)
		}
		if !f.Interrupted || len(f.Sweeps) != 1 || len(f.Sweeps[0].Probes) < done {
			t.Fatalf("search SIGINT: interrupted %v, %d sweeps; want the %d probes done and the mark", f.Interrupted, len(f.Sweeps), done)
		}
		kept := f.Sweeps[0].Probes
		// --resume continues without repeating probes.
		path2 := filepath.Join(tmp, "search-resumed.json")
		_, stderr, code := cli(t, env, append(args, "--json", path2, "--resume", path)...)
		if code != 0 {
			t.Fatalf("search --resume: exit %d; stderr:\n%s", code, stderr)
		}
		g, err := result.Read(path2)
		if err != nil {
			t.Fatal(err)
		}
		if g.Interrupted || len(g.Sweeps) != 1 || len(g.Sweeps[0].Probes) < len(kept) {
			t.Fatalf("search --resume: interrupted %v, sweeps %d", g.Interrupted, len(g.Sweeps))
		}
		for i, k := range kept {
			if k.Interrupted {
				continue
			}
			if got := g.Sweeps[0].Probes[i]; !got.StartedAt.Equal(k.StartedAt) || got.TargetRate != k.TargetRate {
				t.Errorf("search --resume: probe %d at %.0f started %v; want the resumed probe at %.0f started %v (not run again)",
					i+1, got.TargetRate, got.StartedAt, k.TargetRate, k.StartedAt)
			}
		}

		// kill -9 mid-search: the file holds every finished probe, as valid JSON.
		path3 := filepath.Join(tmp, "search-kill.json")
		p = relStartBinary(t, bin, tmp, env, append(args, "--json", path3)...)
		done = relWaitProbes(t, p, path3, 1)
		if err := p.cmd.Process.Kill(); err != nil {
			t.Fatal(err)
		}
		<-p.done
		h, err := result.Read(path3)
		if err != nil {
			t.Fatalf("after kill -9 the results file is not valid: %v", err)
		}
		if len(h.Sweeps) != 1 || len(h.Sweeps[0].Probes) < done {
			t.Errorf("after kill -9: %d sweeps; want the %d finished probes", len(h.Sweeps), done)
		}
		if tmps, _ := filepath.Glob(filepath.Join(tmp, ".search-kill.json*")); len(tmps) > 1 {
			t.Logf("after kill -9, temp files left: %v", tmps)
		}
	})

	t.Run("search embedded SIGTERM", func(t *testing.T) {
		path := filepath.Join(tmp, "search-term.json")
		p := relStartBinary(t, bin, tmp, nil, "search", "--hold", "off", "--workload", "insert", "--sync-commit", "off", "--rows", "2000",
			"--wallets", "50", "--warmup", "0s", "--duration", "2s", "--start-rate", "40", "--growth", "4",
			"--precision", "0.5", "--max-probes", "4", "--conns", "4", "--json", path)
		_, dir := p.embedded(t)
		relWaitProbes(t, p, path, 1)
		pid := postmasterPID(t, dir)
		code, took := p.signal(t, syscall.SIGTERM)
		if code != 143 || took > relStopBudget {
			t.Errorf("search (embedded) SIGTERM: exit %d after %v, want 143 within %v; stderr:\n%s", code, took, relStopBudget, p.stderr.String())
		}
		f, err := result.Read(path)
		if err != nil || !f.Interrupted || len(f.Sweeps) != 1 || len(f.Sweeps[0].Probes) < 1 {
			t.Errorf("search SIGTERM: results %v, err %v; want the finished probes marked interrupted", f, err)
		}
		checkEmbeddedGone(t, "search SIGTERM", tmp, pid)
	})
}

// relWaitProbes waits until the search's results file holds at least n finished probes
// (it is rewritten after every probe) and returns how many it holds.
func relWaitProbes(t *testing.T, p *relProc, path string, n int) int {
	t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for time.Now().Before(deadline) {
		if f, err := result.Read(path); err == nil && len(f.Sweeps) > 0 && len(f.Sweeps[0].Probes) >= n {
			return len(f.Sweeps[0].Probes)
		}
		select {
		case <-p.done:
			t.Fatalf("search ended before %d probes were in %s: %v; stderr:\n%s", n, path, p.err, p.stderr.String())
		case <-time.After(50 * time.Millisecond):
		}
	}
	t.Fatalf("waited 90s for %d probes in %s; stderr:\n%s", n, path, p.stderr.String())
	return 0
}

// TestReliabilityAbsurdInput: sizes that are valid numbers but absurd (a rate of 10^12,
// a ten-year probe, a year of pool wait) must be refused as usage errors before anything
// is allocated for them. They run in the real binary under a 4 GB address-space limit so
// that a missing check fails this test instead of exhausting the machine's memory.
func TestReliabilityAbsurdInput(t *testing.T) {
	tmp := relSharedTemp(t)
	bin := relBuildBinary(t, tmp)
	dsn := pgtest.NewDatabase(t)
	initTiny(t, dsn)
	before := dbChecksum(t, dsn)
	for _, tc := range []struct {
		args []string
		want string
		code int // 2, or 1 where the server is what says no
	}{
		{[]string{"run", "--rate", "1e12", "--warmup", "0s", "--duration", "1s", "--conns", "2"}, "--rate", 2},
		{[]string{"run", "--rate", "10", "--warmup", "0s", "--duration", "87600h", "--conns", "2"}, "--duration", 2},
		{[]string{"run", "--rate", "1000", "--warmup", "0s", "--duration", "1s", "--pool-wait", "8760h", "--conns", "2"}, "--pool-wait", 2},
		{[]string{"run", "--rate", "10", "--warmup", "0s", "--duration", "1s", "--conns", "1000000"}, "--conns", 2},
		{[]string{"search", "--hold", "off", "--workload", "insert", "--sync-commit", "off", "--start-rate", "1e12", "--warmup", "0s", "--duration", "1s", "--max-probes", "1", "--conns", "2",
			"--json", filepath.Join(tmp, "absurd.json")}, "--start-rate", 2},
	} {
		cmd := exec.Command("sh", append([]string{"-c", `ulimit -v 4000000; exec "$0" "$@"`, bin}, tc.args...)...)
		cmd.Env = append(os.Environ(), "PGCEILING_DSN="+dsn)
		var errb lockedBuffer
		cmd.Stderr = &errb
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(60 * time.Second):
			_ = cmd.Process.Kill()
			<-done
			t.Errorf("pgceiling %q: still running after 60s (killed)", tc.args)
		}
		stderr := errb.String()
		if code := cmd.ProcessState.ExitCode(); code != tc.code {
			t.Errorf("pgceiling %q: exit %d, want %d; stderr %.300q", tc.args, code, tc.code, stderr)
		}
		checkOneLine(t, fmt.Sprintf("pgceiling %q", tc.args), stderr)
		if !strings.Contains(stderr, tc.want) {
			t.Errorf("pgceiling %q: stderr %.300q does not name %s", tc.args, stderr, tc.want)
		}
		if sum := dbChecksum(t, dsn); sum != before {
			t.Errorf("pgceiling %q: the database changed", tc.args)
			before = sum
		}
	}
}
