package observe

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// clockTicks is USER_HZ, the unit of the CPU times in /proc/<pid>/stat. Linux exposes
// them in USER_HZ, which is 100 on every mainstream architecture whatever the kernel's
// internal HZ.
const clockTicks = 100

// procStat is the part of /proc/<pid>/stat that observe uses.
type procStat struct {
	Comm      string
	PPID      int
	CPUTicks  int64 // utime + stime
	ChildTick int64 // cutime + cstime: reaped children, e.g. backends that exited
	StartTick int64 // starttime, in clock ticks after boot
}

// readProcStat parses /proc/<pid>/stat under root (normally "/proc").
func readProcStat(root string, pid int) (procStat, error) {
	b, err := os.ReadFile(filepath.Join(root, strconv.Itoa(pid), "stat"))
	if err != nil {
		return procStat{}, err
	}
	return parseProcStat(b)
}

// parseProcStat parses the text of /proc/<pid>/stat. The command name sits in
// parentheses and may itself hold spaces and parentheses, so fields are counted from the
// last ')'.
func parseProcStat(b []byte) (procStat, error) {
	open, end := bytes.IndexByte(b, '('), bytes.LastIndexByte(b, ')')
	if open < 0 || end < open {
		return procStat{}, fmt.Errorf("malformed /proc stat line %q", b)
	}
	f := strings.Fields(string(b[end+1:]))
	// f[0] is field 3 (state); utime is field 14, starttime field 22.
	if len(f) < 20 {
		return procStat{}, fmt.Errorf("short /proc stat line (%d fields)", len(f)+2)
	}
	num := func(i int) int64 { v, _ := strconv.ParseInt(f[i-3], 10, 64); return v }
	return procStat{
		Comm:      string(b[open+1 : end]),
		PPID:      int(num(4)),
		CPUTicks:  num(14) + num(15),
		ChildTick: num(16) + num(17),
		StartTick: num(22),
	}, nil
}

// treeCPU returns the CPU seconds used so far by the process pid and all its direct
// children, including children that already exited and were reaped (their time is in
// the parent's cutime/cstime). For a postmaster that is the whole server: backends,
// checkpointer, WAL writer, autovacuum. Children come from the kernel's children list or,
// without it, from scanning /proc for the parent pid.
func treeCPU(root string, pid int) (float64, error) {
	top, err := readProcStat(root, pid)
	if err != nil {
		return 0, fmt.Errorf("read server process %d: %w", pid, err)
	}
	ticks := top.CPUTicks + top.ChildTick
	children, err := childPIDs(root, pid)
	if err != nil {
		return 0, err
	}
	for _, child := range children {
		st, err := readProcStat(root, child)
		if err != nil || st.PPID != pid {
			continue // gone meanwhile, or not the server's
		}
		ticks += st.CPUTicks + st.ChildTick
	}
	return float64(ticks) / clockTicks, nil
}

// childPIDs lists pid's children: from /proc/<pid>/task/<pid>/children when the kernel
// provides it (the postmaster is single-threaded, so its main task has them all), else
// every process in /proc (callers check the parent).
func childPIDs(root string, pid int) ([]int, error) {
	p := strconv.Itoa(pid)
	var out []int
	if b, err := os.ReadFile(filepath.Join(root, p, "task", p, "children")); err == nil {
		for _, f := range strings.Fields(string(b)) {
			if c, err := strconv.Atoi(f); err == nil {
				out = append(out, c)
			}
		}
		return out, nil
	}
	entries, err := os.ReadDir(root)
	if err != nil {
		return nil, fmt.Errorf("scan %s: %w", root, err)
	}
	for _, e := range entries {
		if c, err := strconv.Atoi(e.Name()); err == nil && c != pid {
			out = append(out, c)
		}
	}
	return out, nil
}

// bootTime reads the boot time from /proc/stat (btime).
func bootTime(root string) (time.Time, error) {
	b, err := os.ReadFile(filepath.Join(root, "stat"))
	if err != nil {
		return time.Time{}, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "btime "); ok {
			s, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			if err != nil {
				return time.Time{}, fmt.Errorf("parse btime: %w", err)
			}
			return time.Unix(s, 0), nil
		}
	}
	return time.Time{}, fmt.Errorf("no btime in %s/stat", root)
}

// localPostmaster decides whether a backend the client talks to runs on this machine,
// and returns its postmaster's pid (0 when not local). The backend's pid (from
// pg_backend_pid()) must exist here as a process named postgres whose parent is also
// named postgres and was started when the server says its postmaster started
// (pg_postmaster_start_time(), within 2 s). The start-time check rules out a remote
// server whose backend pid happens to match an unrelated local postgres process.
func localPostmaster(root string, backendPID int, postmasterStart time.Time) int {
	if backendPID <= 0 {
		return 0
	}
	be, err := readProcStat(root, backendPID)
	if err != nil || !isPostgres(be.Comm) {
		return 0
	}
	pm, err := readProcStat(root, be.PPID)
	if err != nil || !isPostgres(pm.Comm) {
		return 0
	}
	boot, err := bootTime(root)
	if err != nil {
		return 0
	}
	started := boot.Add(time.Duration(pm.StartTick) * time.Second / clockTicks)
	if d := started.Sub(postmasterStart); d < -2*time.Second || d > 2*time.Second {
		return 0
	}
	return be.PPID
}

func isPostgres(comm string) bool { return comm == "postgres" || comm == "postmaster" }

// machine returns this machine's logical cores and total memory in bytes.
func machine() (cores int, memBytes int64) {
	var si syscall.Sysinfo_t
	if err := syscall.Sysinfo(&si); err == nil {
		memBytes = int64(si.Totalram) * int64(si.Unit)
	}
	return runtime.NumCPU(), memBytes
}

// hostCPU reads this machine's cumulative busy, steal and total CPU ticks from the first
// line of /proc/stat. Idle and iowait count as not busy, nor does steal (time the
// hypervisor gave other guests: this machine could not use it); guest time is already in
// user and nice.
func hostCPU(root string) (busy, steal, total int64, err error) {
	b, err := os.ReadFile(filepath.Join(root, "stat"))
	if err != nil {
		return 0, 0, 0, err
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	if len(f) < 5 || f[0] != "cpu" {
		return 0, 0, 0, fmt.Errorf("no cpu line in %s/stat", root)
	}
	for i := 1; i < len(f) && i <= 8; i++ { // user nice system idle iowait irq softirq steal
		v, err := strconv.ParseInt(f[i], 10, 64)
		if err != nil {
			return 0, 0, 0, fmt.Errorf("parse %s/stat cpu line: %w", root, err)
		}
		total += v
		switch i {
		case 4, 5: // idle, iowait
		case 8:
			steal = v
		default:
			busy += v
		}
	}
	return busy, steal, total, nil
}
