package main

// The fleet as real processes (issue 15, "Many processes, one probe"): --spawn's
// children, a follower killed mid-search, a leader killed mid-probe, and the deadlines of
// every wait. The test binary doubles as the pgceiling binary (see init below), so no
// separate build is needed.

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/pgceiling/pgceiling/config"
	"github.com/pgceiling/pgceiling/result"
)

// testAsBinary, set to 1 in a process's environment, makes this test binary run as
// pgceiling (main, with its arguments) instead of running the tests.
const testAsBinary = "PGCEILING_TEST_AS_BINARY"

// init runs before TestMain (and its test server): a child started with testAsBinary is
// pgceiling. The go command compiles a package's test files after its other files, so
// every command has registered itself by now.
func init() {
	if os.Getenv(testAsBinary) == "1" {
		main() // exits
	}
}

// lineWatch is a writer that keeps everything written and calls on for every complete
// line as it arrives (on the writer's goroutine, one call at a time, so on's own state
// needs no lock): the tests act on events, not timers.
type lineWatch struct {
	mu      sync.Mutex
	all     bytes.Buffer
	partial []byte
	on      func(line string)
	calling sync.Mutex // one call of on at a time
}

func (w *lineWatch) Write(p []byte) (int, error) {
	w.mu.Lock()
	w.all.Write(p)
	w.partial = append(w.partial, p...)
	var lines []string
	for {
		i := bytes.IndexByte(w.partial, '\n')
		if i < 0 {
			break
		}
		lines = append(lines, string(w.partial[:i]))
		w.partial = w.partial[i+1:]
	}
	on := w.on
	w.mu.Unlock()
	if on != nil {
		w.calling.Lock()
		defer w.calling.Unlock()
		for _, l := range lines {
			on(l)
		}
	}
	return len(p), nil
}

func (w *lineWatch) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.all.String()
}

// cliTo runs one command line in-process like cli, with stderr going to w (written from
// several goroutines while followers' lines are forwarded).
func cliTo(ctx context.Context, env map[string]string, w *lineWatch, args ...string) int {
	e := &Env{Stdout: &lockedBuffer{}, Stderr: w, Getenv: func(k string) string { return env[k] },
		Args: append([]string{"pgceiling"}, args...)}
	return Main(ctx, e, args)
}

// children are this process's child processes: pid -> argv, from /proc.
func children(t *testing.T) map[int][]string {
	t.Helper()
	dirs, err := filepath.Glob("/proc/[0-9]*")
	if err != nil {
		t.Fatal(err)
	}
	me := os.Getpid()
	kids := map[int][]string{}
	for _, d := range dirs {
		stat, err := os.ReadFile(filepath.Join(d, "stat"))
		if err != nil {
			continue // gone meanwhile
		}
		// pid (comm) state ppid ...: comm may hold spaces, so split after its ')'.
		f := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
		if len(f) < 2 {
			continue
		}
		if ppid, _ := strconv.Atoi(f[1]); ppid != me {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join(d, "cmdline"))
		if err != nil {
			continue
		}
		pid, _ := strconv.Atoi(filepath.Base(d))
		kids[pid] = strings.Split(strings.TrimRight(string(cmdline), "\x00"), "\x00")
	}
	return kids
}

// followersOf are the children that run pgceiling follow: driver id -> pid.
func followersOf(t *testing.T, kids map[int][]string) map[int]int {
	t.Helper()
	ids := map[int]int{}
	for pid, argv := range kids {
		if len(argv) < 2 || argv[1] != "follow" {
			continue
		}
		if i := slices.Index(argv, "--driver-id"); i >= 0 && i+1 < len(argv) {
			id, _ := strconv.Atoi(argv[i+1])
			ids[id] = pid
		}
	}
	return ids
}

// withPassword puts a password into a test DSN (the test server trusts loopback, so it
// is carried and never checked): what must never reach a child's argv.
func withPassword(t *testing.T, dsn, pw string) string {
	t.Helper()
	if !strings.HasPrefix(dsn, "postgres://postgres@") {
		t.Fatalf("unexpected test DSN form %q", dsn)
	}
	return strings.Replace(dsn, "postgres://postgres@", "postgres://postgres:"+pw+"@", 1)
}

// TestFollowerCommandKeepsTheDSNOutOfArgv: a spawned follower's arguments carry the
// fleet's settings and no DSN; the DSN (with its password) is in its environment once,
// replacing any PGCEILING_DSN the leader had.
func TestFollowerCommandKeepsTheDSNOutOfArgv(t *testing.T) {
	dsn := "postgres://me:Sup3rS3cret@db.example:5432/bench"
	fl := config.Fleet{Drivers: 3, Name: "f", MaxSkew: 50 * time.Millisecond, JoinTimeout: time.Minute, Timeout: 3 * time.Second}
	cmd := followerCommand("/bin/pgceiling", dsn, fl, 2, []string{"HOME=/root", config.EnvDSN + "=postgres://old", "PGPASSWORD=x"})
	want := []string{"/bin/pgceiling", "follow", "--fleet", "f", "--driver-id", "2", "--max-skew", "50ms", "--join-timeout", "1m0s", "--fleet-timeout", "3s"}
	if !slices.Equal(cmd.Args, want) {
		t.Errorf("followerCommand(...).Args = %q, want %q", cmd.Args, want)
	}
	if strings.Contains(strings.Join(cmd.Args, " "), "Sup3rS3cret") {
		t.Errorf("the password is in the follower's arguments: %q", cmd.Args)
	}
	var dsns []string
	for _, kv := range cmd.Env {
		if strings.HasPrefix(kv, config.EnvDSN+"=") {
			dsns = append(dsns, kv)
		}
	}
	if !slices.Equal(dsns, []string{config.EnvDSN + "=" + dsn}) || !slices.Contains(cmd.Env, "HOME=/root") {
		t.Errorf("follower environment %q: want the leader's, with %s=%s only", cmd.Env, config.EnvDSN, dsn)
	}
	if cmd.SysProcAttr == nil || cmd.SysProcAttr.Pdeathsig != syscall.SIGKILL || !cmd.SysProcAttr.Setpgid {
		t.Errorf("SysProcAttr %+v: want its own process group and killed with the leader", cmd.SysProcAttr)
	}
}

// TestSpawnFourDrivers: run --drivers 4 --spawn starts three followers of this binary
// whose arguments hold no password, forwards their output prefixed, merges four parts
// whose books balance (and add up to the merged probe's), and leaves no child behind.
func TestSpawnFourDrivers(t *testing.T) {
	const pw = "Fl33tS3cretPw"
	dsn := withPassword(t, runDB(t), pw)
	t.Setenv(testAsBinary, "1") // for the children only: this process is past init
	var seen map[int][]string
	environ := map[int]string{}
	w := &lineWatch{}
	w.on = func(line string) {
		if seen == nil && strings.Contains(line, "4 drivers ready") {
			seen = children(t)
			for pid := range seen {
				b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
				environ[pid] = string(b)
			}
		}
	}
	path := filepath.Join(t.TempDir(), "run.json")
	code := cliTo(context.Background(), map[string]string{config.EnvDSN: dsn}, w, "run", "--drivers", "4", "--spawn",
		"--fleet", "spawn4", "--fleet-timeout", "3s", "--join-timeout", "1m", "--workload", "insert", "--rate", "160",
		"--warmup", "500ms", "--duration", "2s", "--conns", "4", "--json", path)
	stderr := w.String()
	if code != 0 {
		t.Fatalf("pgceiling run --drivers 4 --spawn: code %d, stderr:\n%s", code, stderr)
	}
	ids := followersOf(t, seen)
	if len(ids) != 3 || ids[1] == 0 || ids[2] == 0 || ids[3] == 0 {
		t.Fatalf("children when the fleet was ready: %v; want followers 1, 2 and 3", seen)
	}
	for pid, argv := range seen {
		if strings.Contains(strings.Join(argv, " "), pw) {
			t.Errorf("child %d's arguments hold the password: %q", pid, argv)
		}
		if !strings.Contains(environ[pid], config.EnvDSN+"="+dsn+"\x00") {
			t.Errorf("child %d's environment lacks %s with the DSN", pid, config.EnvDSN)
		}
	}
	if strings.Contains(stderr, pw) {
		t.Error("the password is in the output")
	}
	if strings.Contains(stderr, "pgceiling follow --fleet") {
		t.Errorf("with --spawn the leader still tells the user to start followers; stderr:\n%s", stderr)
	}
	for k := 1; k <= 3; k++ {
		if !regexp.MustCompile(`(?m)^follower ` + strconv.Itoa(k) + `: .*the leader ended the run`).MatchString(stderr) {
			t.Errorf("no line from follower %d saying the run ended, prefixed; stderr:\n%s", k, stderr)
		}
	}
	if left := followersOf(t, children(t)); len(left) > 0 {
		t.Errorf("followers still running after the leader returned: %v", left)
	}
	p := readRun(t, path)
	checkFleetBooks(t, p, 4)
	if !p.Checks.RowsOK || p.TargetRate != 160 {
		t.Errorf("merged probe: target %v, checks %+v: want 160 and the fleet's rows matching every driver's commits", p.TargetRate, p.Checks)
	}
}

// checkFleetBooks: a merged probe of n drivers, every one of which committed; each part's
// books balance, and the parts add up to the merged books, which balance too.
func checkFleetBooks(t *testing.T, p *result.Probe, n int) {
	t.Helper()
	if p.Fleet == nil || len(p.Fleet.Parts) != n || p.Fleet.Drivers != n || len(p.Fleet.Missing) > 0 || p.Error != "" {
		t.Fatalf("fleet %+v, error %q: want %d parts", p.Fleet, p.Error, n)
	}
	var sched, comm, bad int64
	for _, pt := range p.Fleet.Parts {
		if pt.Committed == 0 || pt.Scheduled != pt.Committed+pt.Failed || pt.Error != "" {
			t.Errorf("driver %d's part: scheduled %d, committed %d, failed or rejected %d, error %q: want commits and balanced books",
				pt.Driver, pt.Scheduled, pt.Committed, pt.Failed, pt.Error)
		}
		sched, comm, bad = sched+pt.Scheduled, comm+pt.Committed, bad+pt.Failed
	}
	if !p.Balanced() || p.Scheduled != sched || p.Committed != comm || p.FailedAndRejected() != bad {
		t.Errorf("merged books %d = %d + %d + %d; the parts' %d = %d + %d", p.Scheduled, p.Committed, p.Failed.Total(), p.Rejected,
			sched, comm, bad)
	}
	if p.Latency.Count != p.Committed {
		t.Errorf("the merged latency histogram holds %d commits, the books %d", p.Latency.Count, p.Committed)
	}
}

// TestSpawnedFollowerKilledMidSearch: search --drivers 3 --spawn whose follower 2 is
// killed (SIGKILL) once it acknowledged the first plan: that probe is a fault with the
// two other drivers' parts kept, retried once (a fault again: the follower is gone), and
// then the search stops, its file keeping both probes; the other follower exits when
// the search ends.
func TestSpawnedFollowerKilledMidSearch(t *testing.T) {
	dsn := runDB(t)
	t.Setenv(testAsBinary, "1")
	killed := ""
	w := &lineWatch{}
	w.on = func(line string) {
		if killed == "" && strings.HasPrefix(line, "follower 2: ") && strings.Contains(line, "starting in") {
			pid := followersOf(t, children(t))[2]
			if pid == 0 {
				killed = "follower 2 not found among the children"
				return
			}
			killed = "killed"
			if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
				killed = err.Error()
			}
		}
	}
	path := filepath.Join(t.TempDir(), "search.json")
	begin := time.Now()
	code := cliTo(context.Background(), map[string]string{config.EnvDSN: dsn}, w, "search", "--drivers", "3", "--spawn",
		"--fleet", "kill1", "--fleet-timeout", "2s", "--join-timeout", "1m", "--workload", "insert", "--sync-commit", "on",
		"--start-rate", "90", "--warmup", "500ms", "--duration", "2s", "--hold", "off", "--repeats", "0", "--conns", "4",
		"--json", path)
	stderr := w.String()
	if killed != "killed" {
		t.Fatalf("killing follower 2: %q; stderr:\n%s", killed, stderr)
	}
	if code != 1 || !strings.Contains(stderr, "search stopped these sweeps early: insert sync=on (fault") {
		t.Fatalf("pgceiling search: code %d, want 1 with a line naming the sweep stopped on the fault; stderr:\n%s", code, stderr)
	}
	if d := time.Since(begin); d > 90*time.Second {
		t.Errorf("the search took %v after losing a follower", d)
	}
	f, err := result.Read(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Sweeps) != 1 {
		t.Fatalf("%d sweeps", len(f.Sweeps))
	}
	sw := f.Sweeps[0]
	if len(sw.Probes) != 2 || !strings.HasPrefix(sw.Stop, "fault") {
		t.Fatalf("%d probes, stop %q: want two faults and a stop on the fault", len(sw.Probes), sw.Stop)
	}
	for i, p := range sw.Probes {
		if p.Verdict != result.Fault || p.Retry != (i == 1) || p.Fleet == nil || !slices.Equal(p.Fleet.Missing, []int{2}) {
			t.Errorf("probe %d: verdict %s (%s), retry %v, fleet %+v: want a fault missing driver 2", i+1, p.Verdict, p.Reason, p.Retry, p.Fleet)
			continue
		}
		if len(p.Fleet.Parts) != 2 || p.Committed == 0 || !p.Balanced() || !strings.Contains(p.Error, "driver 2") {
			t.Errorf("probe %d: %d parts, committed %d, balanced %v, error %q: want the leader's and follower 1's parts kept",
				i+1, len(p.Fleet.Parts), p.Committed, p.Balanced(), p.Error)
		}
	}
	if !strings.Contains(stderr, "follower 2: exited: signal: killed") ||
		!regexp.MustCompile(`(?m)^follower 1: .*the leader ended the run`).MatchString(stderr) {
		t.Errorf("want follower 2's death and follower 1's end in the output:\n%s", stderr)
	}
	if left := followersOf(t, children(t)); len(left) > 0 {
		t.Errorf("followers still running after the search returned: %v", left)
	}
}

// binProc is this test binary started as pgceiling in a process of its own.
type binProc struct {
	cmd    *exec.Cmd
	stderr *lineWatch
	done   chan struct{}
	ended  time.Time
}

// startAsBinary starts pgceiling args in a child process with the extra environment;
// on calls back for each line of its stderr. The test's end kills it if still running.
func startAsBinary(t *testing.T, env map[string]string, on func(string), args ...string) *binProc {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, args...)
	cmd.Env = append(os.Environ(), testAsBinary+"=1")
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	p := &binProc{cmd: cmd, stderr: &lineWatch{on: on}, done: make(chan struct{})}
	cmd.Stderr, cmd.Stdout = p.stderr, &lockedBuffer{}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %v: %v", args, err)
	}
	go func() {
		_ = cmd.Wait()
		p.ended = time.Now()
		close(p.done)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-p.done
	})
	return p
}

// wait waits for the process's exit, at most d, and returns its exit code.
func (p *binProc) wait(t *testing.T, what string, d time.Duration) int {
	t.Helper()
	select {
	case <-p.done:
		return p.cmd.ProcessState.ExitCode()
	case <-time.After(d):
		t.Fatalf("%s still runs after %v; stderr:\n%s", what, d, p.stderr.String())
		return 0
	}
}

// TestLeaderKilledStopsEveryFollower: a leader (run --drivers 4, a 60 s probe) killed
// with SIGKILL inside the measured window, its three followers (separate pgceiling
// follow processes, as on Kubernetes) running their shares: each follower stops its
// probe and exits 1 with a message naming the leader's heartbeat within a few seconds,
// far inside the probe.
func TestLeaderKilledStopsEveryFollower(t *testing.T) {
	dsn := runDB(t)
	env := map[string]string{config.EnvDSN: dsn}
	acked := make(chan int, 3)
	var fs []*binProc
	for k := 1; k <= 3; k++ {
		fs = append(fs, startAsBinary(t, env, func(line string) {
			if strings.Contains(line, "probe 1:") && strings.Contains(line, "starting in") {
				acked <- k
			}
		}, "follow", "--fleet", "lost", "--driver-id", strconv.Itoa(k), "--fleet-timeout", "2s", "--join-timeout", "1m"))
	}
	measuring := make(chan struct{})
	var once sync.Once
	leader := startAsBinary(t, env, func(line string) {
		if strings.Contains(line, " measure |") {
			once.Do(func() { close(measuring) })
		}
	}, "run", "--drivers", "4", "--fleet", "lost", "--fleet-timeout", "2s", "--join-timeout", "1m",
		"--workload", "insert", "--rate", "80", "--warmup", "500ms", "--duration", "60s", "--conns", "2", "--progress", "1")
	for range 3 {
		select {
		case <-acked:
		case <-leader.done:
			t.Fatalf("the leader ended before its followers acknowledged the probe:\n%s", leader.stderr.String())
		case <-time.After(90 * time.Second):
			t.Fatalf("the followers did not all acknowledge probe 1; leader:\n%s", leader.stderr.String())
		}
	}
	// Every driver is past its warm-up, inside the measured window, when the leader dies.
	select {
	case <-measuring:
	case <-leader.done:
		t.Fatalf("the leader ended before it measured:\n%s", leader.stderr.String())
	case <-time.After(30 * time.Second):
		t.Fatalf("the leader did not reach its measured window; stderr:\n%s", leader.stderr.String())
	}
	if err := leader.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-leader.done
	for i, f := range fs {
		code := f.wait(t, "follower "+strconv.Itoa(i+1), 30*time.Second)
		took := f.ended.Sub(leader.ended)
		msg := f.stderr.String()
		if code != 1 || !strings.Contains(msg, "the leader's last heartbeat was") || !strings.Contains(msg, "the leader is gone") {
			t.Errorf("follower %d: exit %d, stderr:\n%s\nwant exit 1 and the leader's heartbeat named", i+1, code, msg)
		}
		if took > 15*time.Second {
			t.Errorf("follower %d stopped %v after the leader died (--fleet-timeout 2s, the probe 60 s)", i+1, took)
		}
	}
}

// TestFleetWaitsHaveDeadlines: a follower with no leader, and a leader with no
// followers, each give up after --join-timeout with one clear line and exit 1.
func TestFleetWaitsHaveDeadlines(t *testing.T) {
	dsn := runDB(t)
	env := map[string]string{config.EnvDSN: dsn}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"follow", "--fleet", "nobody", "--join-timeout", "1s"}, "no leader on this server within 1s"},
		{[]string{"run", "--drivers", "3", "--fleet", "alone", "--join-timeout", "1s", "--rate", "10", "--duration", "1s"},
			"0 of 2 followers joined within 1s"},
	} {
		begin := time.Now()
		_, stderr, code := cli(t, env, tc.args...)
		if code != 1 || !strings.Contains(stderr, tc.want) {
			t.Errorf("pgceiling %s: exit %d, stderr %q; want 1 and %q", strings.Join(tc.args, " "), code, stderr, tc.want)
		}
		if d := time.Since(begin); d > 20*time.Second {
			t.Errorf("pgceiling %s gave up after %v (--join-timeout 1s)", strings.Join(tc.args, " "), d)
		}
	}
}

// TestSpawnInterruptedStopsFollowers: a run --drivers 3 --spawn interrupted mid-probe
// (its context cancelled, as Ctrl-C does) returns within seconds, writes its result
// marked interrupted, and leaves none of its followers running.
func TestSpawnInterruptedStopsFollowers(t *testing.T) {
	dsn := runDB(t)
	t.Setenv(testAsBinary, "1")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var once sync.Once
	var cancelled time.Time
	w := &lineWatch{}
	w.on = func(line string) {
		if strings.Contains(line, " measure |") && !strings.HasPrefix(line, "follower") {
			once.Do(func() {
				cancelled = time.Now()
				cancel()
			})
		}
	}
	path := filepath.Join(t.TempDir(), "run.json")
	code := cliTo(ctx, map[string]string{config.EnvDSN: dsn}, w, "run", "--drivers", "3", "--spawn", "--fleet", "intr",
		"--fleet-timeout", "2s", "--join-timeout", "1m", "--workload", "insert", "--rate", "90", "--warmup", "500ms",
		"--duration", "60s", "--conns", "2", "--progress", "1", "--json", path)
	stderr := w.String()
	if cancelled.IsZero() {
		t.Fatalf("the run ended (code %d) before its probe measured; stderr:\n%s", code, stderr)
	}
	if d := time.Since(cancelled); d > 20*time.Second {
		t.Errorf("the interrupted run returned %v after the interruption", d)
	}
	if code == 0 {
		t.Errorf("an interrupted run exited 0; stderr:\n%s", stderr)
	}
	if left := followersOf(t, children(t)); len(left) > 0 {
		t.Errorf("followers still running after the interrupted run returned: %v", left)
	}
	f, err := result.Read(path)
	if err != nil {
		t.Fatalf("the interrupted run's result: %v; stderr:\n%s", err, stderr)
	}
	if !f.Interrupted {
		t.Errorf("the result is not marked interrupted")
	}
}
