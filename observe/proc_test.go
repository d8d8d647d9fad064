package observe

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// fakeProc writes a /proc-like tree: btime and one stat file per process.
type fakeProc struct {
	t    *testing.T
	root string
}

func newFakeProc(t *testing.T, btime int64) *fakeProc {
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "stat"), fmt.Appendf(nil, "cpu  1 2 3\nbtime %d\nprocesses 9\n", btime), 0o644); err != nil {
		t.Fatal(err)
	}
	return &fakeProc{t: t, root: root}
}

// add writes /proc/<pid>/stat with the given fields (times in clock ticks).
func (f *fakeProc) add(pid int, comm string, ppid int, utime, stime, cutime, cstime, start int64) {
	dir := filepath.Join(f.root, fmt.Sprint(pid))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		f.t.Fatal(err)
	}
	line := fmt.Sprintf("%d (%s) S %d 1 1 0 -1 4194560 100 0 0 0 %d %d %d %d 20 0 1 0 %d 1000 10 18446744073709551615\n",
		pid, comm, ppid, utime, stime, cutime, cstime, start)
	if err := os.WriteFile(filepath.Join(dir, "stat"), []byte(line), 0o644); err != nil {
		f.t.Fatal(err)
	}
}

func TestParseProcStat(t *testing.T) {
	in := "4242 (post gres) (x)) R 17 1 1 0 -1 4194560 100 0 0 0 250 50 7 3 20 0 1 0 12345 1000 10\n"
	got, err := parseProcStat([]byte(in))
	want := procStat{Comm: "post gres) (x)", PPID: 17, CPUTicks: 300, ChildTick: 10, StartTick: 12345}
	if err != nil || got != want {
		t.Errorf("parseProcStat(%q) = %+v, %v; want %+v", in, got, err, want)
	}
	if _, err := parseProcStat([]byte("12 (x) S 1 2")); err == nil {
		t.Error("parseProcStat(short line): want an error")
	}
}

func TestTreeCPU(t *testing.T) {
	f := newFakeProc(t, 1000)
	f.add(100, "postgres", 1, 100, 50, 30, 20, 500) // postmaster: 150 own + 50 reaped
	f.add(101, "postgres", 100, 200, 100, 0, 0, 600)
	f.add(102, "postgres", 100, 10, 0, 0, 0, 700)
	f.add(200, "bash", 1, 999, 999, 0, 0, 100)     // not the server's
	f.add(201, "postgres", 200, 999, 0, 0, 0, 100) // another server's child
	got, err := treeCPU(f.root, 100)
	if want := (150 + 50 + 300 + 10) / float64(clockTicks); err != nil || got != want {
		t.Errorf("treeCPU(fake, 100) = %g, %v; want %g", got, err, want)
	}
	// With the kernel's children list (which may omit a child that just started, or
	// name one that just exited) the same total comes out.
	if err := os.MkdirAll(filepath.Join(f.root, "100", "task", "100"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(f.root, "100", "task", "100", "children"), []byte("101 102 103 "), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err = treeCPU(f.root, 100)
	if want := (150 + 50 + 300 + 10) / float64(clockTicks); err != nil || got != want {
		t.Errorf("treeCPU(fake with children list, 100) = %g, %v; want %g", got, err, want)
	}
	if _, err := treeCPU(f.root, 999); err == nil {
		t.Error("treeCPU(missing pid): want an error")
	}
}

func TestLocalPostmaster(t *testing.T) {
	const btime = 1_700_000_000
	f := newFakeProc(t, btime)
	f.add(100, "postgres", 1, 0, 0, 0, 0, 5000) // started 50 s after boot
	f.add(101, "postgres", 100, 0, 0, 0, 0, 9000)
	f.add(300, "bash", 1, 0, 0, 0, 0, 5000)
	f.add(301, "postgres", 300, 0, 0, 0, 0, 9000)
	started := time.Unix(btime+50, 0)
	for _, tc := range []struct {
		backend int
		start   time.Time
		want    int
	}{
		{101, started, 100},
		{101, started.Add(1500 * time.Millisecond), 100},
		{101, started.Add(time.Hour), 0}, // a remote server whose backend pid exists here
		{301, started, 0},                // parent is not a postgres process
		{100, started, 0},                // its parent (init) is not postgres
		{555, started, 0},                // no such process
		{0, started, 0},
	} {
		if got := localPostmaster(f.root, tc.backend, tc.start); got != tc.want {
			t.Errorf("localPostmaster(fake, %d, %v) = %d, want %d", tc.backend, tc.start, got, tc.want)
		}
	}
}

func TestHostCPU(t *testing.T) {
	root := t.TempDir()
	// user nice system idle iowait irq softirq steal guest guest_nice
	stat := "cpu  100 20 30 500 50 5 5 10 40 0\ncpu0 1 2 3 4 5 6 7 8 9 0\nbtime 1\n"
	if err := os.WriteFile(filepath.Join(root, "stat"), []byte(stat), 0o644); err != nil {
		t.Fatal(err)
	}
	busy, steal, total, err := hostCPU(root)
	if err != nil || busy != 160 || steal != 10 || total != 720 {
		t.Errorf("hostCPU(%q) = %d, %d, %d, %v; want 160 busy and 10 steal of 720", stat, busy, steal, total, err)
	}
	if err := os.WriteFile(filepath.Join(root, "stat"), []byte("intr 1 2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := hostCPU(root); err == nil {
		t.Error("hostCPU(no cpu line): want an error")
	}
}

func TestStealSeries(t *testing.T) {
	// Two cores at 100 ticks a second: 200 ticks a second, one steal tick is 0.5 %.
	got := stealSeries([]hostTicks{{0, 0}, {1, 200}, {1, 400}, {21, 600}, {21, 600}, {20, 800}, {1021, 1800}})
	want := []float64{0.005, 0, 0.1, 0, 0, 1}
	if len(got) != len(want) {
		t.Fatalf("stealSeries = %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("stealSeries = %v, want %v (second %d: no ticks is 0, a counter that went back is 0, over 1 is 1)", got, want, i)
			break
		}
	}
	if s := stealSeries([]hostTicks{{5, 100}}); s != nil {
		t.Errorf("stealSeries(one reading) = %v, want nil: no whole second", s)
	}
}
