// Package localpg starts a throwaway PostgreSQL server from the server binaries installed
// on the machine: it finds them, runs initdb into a temporary directory, writes a
// configuration (durable, loopback only, a free port, the unix socket inside the
// directory), starts the server, and on Stop shuts it down and removes every file.
//
// Started as root, it runs the server as the "postgres" user, because PostgreSQL refuses
// to run as root. The same package starts the server for the test suite, so tests run
// against a real PostgreSQL and need nothing running beforehand.
package localpg

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// ErrNoBinaries is returned when no PostgreSQL server binaries can be found.
var ErrNoBinaries = errors.New("no PostgreSQL server binaries found (looked in PATH, `pg_config --bindir` and /usr/lib/postgresql/*/bin); install them, e.g. `apt-get install -y postgresql`, or pass --dsn to use an existing server")

// Options configures a throwaway server. The zero value is usable.
type Options struct {
	// BinDir holds initdb, pg_ctl and postgres. Empty: FindBinDir.
	BinDir string
	// BaseDir is where the temporary directory is made. Empty: os.TempDir().
	// It must be traversable by the postgres user when running as root.
	BaseDir string
	// SharedBuffers, e.g. "256MB". Empty: scaled to the machine (RAM/8, 128MB..2GB).
	SharedBuffers string
	// MaxConnections. Zero: 200.
	MaxConnections int
	// Settings are extra postgresql.conf lines (name -> value, value written verbatim
	// and single-quoted), applied last so they override the defaults.
	Settings map[string]string
	// StartTimeout bounds the wait for the server to accept connections. Zero: 60s.
	StartTimeout time.Duration
}

// Server is a running throwaway PostgreSQL.
type Server struct {
	BinDir  string
	Dir     string // the temporary directory holding everything
	DataDir string
	Port    int
	Host    string // 127.0.0.1
	Version string // e.g. "15.18"

	cred    *syscall.Credential
	logPath string
	mu      sync.Mutex
	stopped bool
}

// FindBinDir locates the PostgreSQL server binaries: a postgres binary on PATH (symlinks
// resolved), then `pg_config --bindir`, then the newest /usr/lib/postgresql/*/bin.
func FindBinDir() (string, error) {
	ok := func(dir string) bool {
		for _, b := range []string{"postgres", "initdb", "pg_ctl"} {
			if st, err := os.Stat(filepath.Join(dir, b)); err != nil || st.IsDir() {
				return false
			}
		}
		return true
	}
	if p, err := exec.LookPath("postgres"); err == nil {
		if real, err := filepath.EvalSymlinks(p); err == nil && ok(filepath.Dir(real)) {
			return filepath.Dir(real), nil
		}
	}
	if p, err := exec.LookPath("pg_config"); err == nil {
		if out, err := exec.Command(p, "--bindir").Output(); err == nil {
			dir := strings.TrimSpace(string(out))
			if ok(dir) {
				return dir, nil
			}
		}
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool { return majorOf(dirs[i]) > majorOf(dirs[j]) })
	for _, d := range dirs {
		if ok(d) {
			return d, nil
		}
	}
	return "", ErrNoBinaries
}

func majorOf(binDir string) float64 {
	v, _ := strconv.ParseFloat(filepath.Base(filepath.Dir(binDir)), 64)
	return v
}

// Start creates, configures and starts a throwaway server and waits until it accepts
// connections. On any error everything it made is removed.
func Start(ctx context.Context, opt Options) (*Server, error) {
	bin := opt.BinDir
	if bin == "" {
		var err error
		if bin, err = FindBinDir(); err != nil {
			return nil, err
		}
	}
	cred, err := serverCredential()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp(opt.BaseDir, "pgceiling-pg-")
	if err != nil {
		return nil, fmt.Errorf("localpg: temp dir: %w", err)
	}
	s := &Server{BinDir: bin, Dir: dir, DataDir: filepath.Join(dir, "data"), Host: "127.0.0.1",
		cred: cred, logPath: filepath.Join(dir, "server.log")}
	if err := s.create(ctx, opt); err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	if err := s.start(ctx, opt.StartTimeout); err != nil {
		s.kill()
		_ = os.RemoveAll(dir)
		return nil, err
	}
	return s, nil
}

// serverCredential returns the postgres user's credential when running as root.
func serverCredential() (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		return nil, errors.New("localpg: running as root and there is no `postgres` user to run the server as (PostgreSQL refuses to run as root); install the postgresql package or run as another user")
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
}

func (s *Server) command(ctx context.Context, name string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, filepath.Join(s.BinDir, name), args...)
	cmd.Dir = s.Dir
	cmd.Env = []string{"PATH=/usr/bin:/bin", "LC_ALL=C", "HOME=" + s.Dir, "TZ=UTC"}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Credential: s.cred}
	return cmd
}

func (s *Server) run(ctx context.Context, name string, args ...string) error {
	cmd := s.command(ctx, name, args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("localpg: %s: %w: %s", name, err, lastLines(out.String(), 5))
	}
	return nil
}

func (s *Server) create(ctx context.Context, opt Options) error {
	if s.cred != nil {
		if err := os.Chown(s.Dir, int(s.cred.Uid), int(s.cred.Gid)); err != nil {
			return fmt.Errorf("localpg: chown temp dir: %w", err)
		}
	}
	if err := s.run(ctx, "initdb", "-D", s.DataDir, "-U", "postgres", "-A", "trust",
		"-E", "UTF8", "--locale=C", "--no-sync"); err != nil {
		return err
	}
	port, err := freePort()
	if err != nil {
		return err
	}
	s.Port = port
	if out, err := s.command(ctx, "postgres", "--version").Output(); err == nil {
		// "postgres (PostgreSQL) 15.18 (Debian 15.18-0+deb12u1)": the first number.
		for _, f := range strings.Fields(string(out)) {
			if f[0] >= '0' && f[0] <= '9' {
				s.Version = f
				break
			}
		}
	}
	conf := s.config(opt)
	f, err := os.OpenFile(filepath.Join(s.DataDir, "postgresql.conf"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		return fmt.Errorf("localpg: open postgresql.conf: %w", err)
	}
	if _, err := f.WriteString(conf); err != nil {
		f.Close()
		return fmt.Errorf("localpg: write postgresql.conf: %w", err)
	}
	return f.Close()
}

// config renders the settings appended to postgresql.conf.
func (s *Server) config(opt Options) string {
	sb := opt.SharedBuffers
	if sb == "" {
		sb = fmt.Sprintf("%dMB", DefaultSharedBuffersMB())
	}
	maxConn := opt.MaxConnections
	if maxConn == 0 {
		maxConn = 200
	}
	set := map[string]string{
		"listen_addresses":                 "127.0.0.1",
		"port":                             strconv.Itoa(s.Port),
		"unix_socket_directories":          s.Dir,
		"fsync":                            "on",
		"synchronous_commit":               "on",
		"full_page_writes":                 "on",
		"shared_buffers":                   sb,
		"max_connections":                  strconv.Itoa(maxConn),
		"max_wal_size":                     "2GB",
		"checkpoint_completion_target":     "0.9",
		"maintenance_work_mem":             "256MB",
		"max_parallel_maintenance_workers": strconv.Itoa(max(1, runtime.NumCPU()/2)),
		"track_io_timing":                  "on",
		"track_wal_io_timing":              "on",
		"logging_collector":                "off",
		"log_min_messages":                 "warning",
		"timezone":                         "UTC",
	}
	for k, v := range opt.Settings {
		set[k] = v
	}
	keys := make([]string, 0, len(set))
	for k := range set {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	b.WriteString("\n# written by pgceiling localpg\n")
	for _, k := range keys {
		fmt.Fprintf(&b, "%s = '%s'\n", k, strings.ReplaceAll(set[k], "'", "''"))
	}
	return b.String()
}

// DefaultSharedBuffersMB scales shared_buffers to the machine: RAM/8, within 128 MB..2 GB.
func DefaultSharedBuffersMB() int {
	mb := int(totalMemory() / 8 >> 20)
	return min(max(mb, 128), 2048)
}

func totalMemory() uint64 {
	var si syscall.Sysinfo_t
	if err := syscall.Sysinfo(&si); err != nil {
		return 1 << 30
	}
	return uint64(si.Totalram) * uint64(si.Unit)
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("localpg: find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func (s *Server) start(ctx context.Context, timeout time.Duration) error {
	if timeout == 0 {
		timeout = 60 * time.Second
	}
	// pg_ctl -w waits until the server accepts connections (or fails to start).
	err := s.run(ctx, "pg_ctl", "-D", s.DataDir, "-l", s.logPath, "-w",
		"-t", strconv.Itoa(int(timeout.Seconds())), "start")
	if err != nil {
		return fmt.Errorf("%w\nserver log: %s", err, lastLines(s.Log(), 10))
	}
	return nil
}

// DSN returns a connection string for the given database over TCP on loopback.
func (s *Server) DSN(database string) string {
	if database == "" {
		database = "postgres"
	}
	return fmt.Sprintf("postgres://postgres@%s:%d/%s?sslmode=disable", s.Host, s.Port, database)
}

// Log returns the server log so far.
func (s *Server) Log() string {
	b, _ := os.ReadFile(s.logPath)
	return string(b)
}

// Restart stops the server fast (terminating sessions) and starts it again on the same
// port, as `pg_ctl restart -m fast` does.
func (s *Server) Restart(ctx context.Context) error {
	if err := s.run(ctx, "pg_ctl", "-D", s.DataDir, "-m", "fast", "-w", "stop"); err != nil {
		return err
	}
	return s.start(ctx, 0)
}

// Halt stops the server fast but keeps its files, so it can be started again with Resume.
func (s *Server) Halt(ctx context.Context) error {
	return s.run(ctx, "pg_ctl", "-D", s.DataDir, "-m", "fast", "-w", "stop")
}

// Resume starts a halted server again.
func (s *Server) Resume(ctx context.Context) error { return s.start(ctx, 0) }

// Stop shuts the server down (fast, then immediate) and removes every file it made.
// It is safe to call more than once and from several goroutines.
func (s *Server) Stop() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		return nil
	}
	s.stopped = true
	s.kill()
	if err := os.RemoveAll(s.Dir); err != nil {
		return fmt.Errorf("localpg: remove %s: %w", s.Dir, err)
	}
	return nil
}

// kill stops the server if it runs: fast shutdown, then immediate, then SIGKILL.
func (s *Server) kill() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if s.pid() == 0 {
		return
	}
	if s.run(ctx, "pg_ctl", "-D", s.DataDir, "-m", "fast", "-w", "-t", "15", "stop") == nil {
		return
	}
	if s.run(ctx, "pg_ctl", "-D", s.DataDir, "-m", "immediate", "-w", "-t", "10", "stop") == nil {
		return
	}
	if pid := s.pid(); pid > 0 {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
}

// pid reads the postmaster's pid, 0 if it is not running.
func (s *Server) pid() int {
	b, err := os.ReadFile(filepath.Join(s.DataDir, "postmaster.pid"))
	if err != nil {
		return 0
	}
	line, _, _ := strings.Cut(string(b), "\n")
	pid, _ := strconv.Atoi(strings.TrimSpace(line))
	return pid
}

// PID returns the postmaster's process id (0 when not running), so callers can read the
// server's CPU time from /proc.
func (s *Server) PID() int { return s.pid() }

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " | ")
}
