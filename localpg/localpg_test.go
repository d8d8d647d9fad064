package localpg

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
)

func TestFindBinDir(t *testing.T) {
	dir, err := FindBinDir()
	if err != nil {
		t.Fatalf("FindBinDir() = %v; the test suite needs the PostgreSQL server binaries (.ci/run installs them)", err)
	}
	for _, b := range []string{"postgres", "initdb", "pg_ctl"} {
		if _, err := os.Stat(filepath.Join(dir, b)); err != nil {
			t.Errorf("FindBinDir() = %s, but %s is missing: %v", dir, b, err)
		}
	}
}

func TestStartQueryStopRemoves(t *testing.T) {
	ctx := context.Background()
	s, err := Start(ctx, Options{SharedBuffers: "64MB", MaxConnections: 30,
		Settings: map[string]string{"work_mem": "8MB"}})
	if err != nil {
		t.Fatalf("Start() = %v", err)
	}
	defer s.Stop()
	conn, err := pgx.Connect(ctx, s.DSN(""))
	if err != nil {
		t.Fatalf("connect %s: %v", s.DSN(""), err)
	}
	want := map[string]string{"fsync": "on", "synchronous_commit": "on", "shared_buffers": "64MB",
		"max_connections": "30", "work_mem": "8MB", "listen_addresses": "127.0.0.1"}
	for name, w := range want {
		var got string
		if err := conn.QueryRow(ctx, "SELECT current_setting($1)", name).Scan(&got); err != nil {
			t.Fatalf("current_setting(%s): %v", name, err)
		}
		if got != w {
			t.Errorf("setting %s = %q, want %q", name, got, w)
		}
	}
	var user string
	if err := conn.QueryRow(ctx, "SELECT current_user").Scan(&user); err != nil || user != "postgres" {
		t.Errorf("current_user = %q, %v; want postgres", user, err)
	}
	conn.Close(ctx)
	if !regexp.MustCompile(`^\d+(\.\d+)*$`).MatchString(s.Version) {
		t.Errorf("Version = %q, want a server version", s.Version)
	}
	if s.PID() == 0 {
		t.Errorf("PID() = 0 while running")
	}

	// Restart keeps the port and data.
	if err := s.Restart(ctx); err != nil {
		t.Fatalf("Restart() = %v", err)
	}
	conn, err = pgx.Connect(ctx, s.DSN(""))
	if err != nil {
		t.Fatalf("connect after restart: %v", err)
	}
	conn.Close(ctx)

	dir, pid := s.Dir, s.PID()
	if err := s.Stop(); err != nil {
		t.Fatalf("Stop() = %v", err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("after Stop, %s still exists (err=%v)", dir, err)
	}
	if running(pid) {
		t.Errorf("postmaster %d still running after Stop", pid)
	}
	if err := s.Stop(); err != nil {
		t.Errorf("second Stop() = %v, want nil", err)
	}
}

func TestStartFailsCleanlyWithBadSetting(t *testing.T) {
	_, err := Start(context.Background(), Options{SharedBuffers: "64MB",
		Settings: map[string]string{"no_such_setting_xyz": "1"}})
	if err == nil {
		t.Fatal("Start with an unknown setting succeeded, want an error")
	}
	if !strings.Contains(err.Error(), "no_such_setting_xyz") {
		t.Errorf("error %q does not name the bad setting", err)
	}
	left, _ := filepath.Glob(filepath.Join(os.TempDir(), "pgceiling-pg-*"))
	for _, d := range left {
		if b, err := os.ReadFile(filepath.Join(d, "data", "postgresql.conf")); err == nil && strings.Contains(string(b), "no_such_setting_xyz") {
			t.Errorf("failed Start left %s behind", d)
		}
	}
}

func TestNoBinaries(t *testing.T) {
	_, err := Start(context.Background(), Options{BinDir: t.TempDir()})
	if err == nil {
		t.Fatal("Start with an empty BinDir succeeded")
	}
}

// running reports whether pid is a live (not zombie) process.
func running(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	_, after, _ := strings.Cut(string(b), ") ")
	return !strings.HasPrefix(after, "Z") && !strings.HasPrefix(after, "X")
}
