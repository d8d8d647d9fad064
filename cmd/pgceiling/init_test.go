package main

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pgceiling/pgceiling/internal/pgtest"
)

// oneLine fails the test unless stderr is exactly one line without a stack trace or
// any of the secrets.
func oneLine(t *testing.T, what, stderr string, secrets ...string) {
	t.Helper()
	s := strings.TrimSpace(stderr)
	if s == "" || strings.Contains(s, "\n") {
		t.Errorf("%s: want one line on stderr, got %q", what, stderr)
	}
	if strings.Contains(s, "goroutine ") || strings.Contains(s, "panic") {
		t.Errorf("%s: stack trace on stderr: %q", what, stderr)
	}
	for _, sec := range secrets {
		if strings.Contains(stderr, sec) {
			t.Errorf("%s: stderr shows the password %q: %q", what, sec, stderr)
		}
	}
}

func admin(t *testing.T, dsn string) *pgx.Conn {
	t.Helper()
	c, err := pgx.Connect(context.Background(), dsn)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { c.Close(context.Background()) })
	return c
}

// withUser returns dsn with another user (and password).
func withUser(t *testing.T, dsn, user, password string) string {
	t.Helper()
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	if password == "" {
		u.User = url.User(user)
	} else {
		u.User = url.UserPassword(user, password)
	}
	return u.String()
}

func TestInitAndDropCommands(t *testing.T) {
	dsn := pgtest.NewDatabase(t)
	small := []string{"--rows", "6000", "--wallets", "50", "--months", "2", "--workers", "2"}
	args := append([]string{"init", "--dsn", dsn}, small...)
	stdout, stderr, code := cli(t, nil, args...)
	if code != 0 || !strings.Contains(stdout, "schema pgceiling created") || !strings.Contains(stdout, "6,000 rows in transactions over 6 partitions") ||
		!strings.Contains(stdout, "shared_buffers") || !strings.Contains(stderr, "init: done") {
		t.Fatalf("pgceiling %s: code %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), code, stdout, stderr)
	}
	for _, want := range []string{"transactions", "audit_log", "wallets", "events"} {
		if !strings.Contains(stdout, "  "+want) {
			t.Errorf("init's table of sizes lacks %s:\n%s", want, stdout)
		}
	}

	stdout, stderr, code = cli(t, nil, args...)
	if code != 0 || !strings.Contains(stdout, "already initialised") {
		t.Errorf("init again: code %d, stdout %q, stderr %q; want 0 and `already initialised`", code, stdout, stderr)
	}

	// Another spec through $PGCEILING_DSN and a config file: needs --force.
	cfgFile := filepath.Join(t.TempDir(), "init.conf")
	os.WriteFile(cfgFile, []byte("# smaller\nrows = 3000\nwallets = 50\nmonths = 2\n"), 0o644)
	env := map[string]string{"PGCEILING_DSN": dsn}
	_, stderr, code = cli(t, env, "init", "--config", cfgFile)
	if code != 1 || !strings.Contains(stderr, "--force") {
		t.Errorf("init with another spec: code %d, stderr %q; want 1 and a hint about --force", code, stderr)
	}
	oneLine(t, "init with another spec", stderr)
	stdout, stderr, code = cli(t, env, "init", "--config", cfgFile, "--force")
	if code != 0 || !strings.Contains(stdout, "schema pgceiling rebuilt") || !strings.Contains(stdout, "3,000 rows") {
		t.Errorf("init --force: code %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}

	stdout, stderr, code = cli(t, nil, "drop", "--dsn", dsn)
	if code != 0 || !strings.Contains(stdout, "dropped") {
		t.Errorf("drop: code %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	stdout, _, code = cli(t, nil, "drop", "--dsn", dsn)
	if code != 0 || !strings.Contains(stdout, "nothing to drop") {
		t.Errorf("drop again: code %d, stdout %q; want 0 and `nothing to drop`", code, stdout)
	}
}

func TestDropRefusesUnmarkedSchema(t *testing.T) {
	dsn := pgtest.NewDatabase(t)
	c := admin(t, dsn)
	if _, err := c.Exec(context.Background(), `CREATE SCHEMA pgceiling; CREATE TABLE pgceiling.mine (v int); INSERT INTO pgceiling.mine VALUES (42)`); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"drop", "--dsn", dsn}, {"init", "--dsn", dsn, "--rows", "100", "--force"}} {
		_, stderr, code := cli(t, nil, args...)
		if code != 1 || !strings.Contains(stderr, "not made by pgceiling") {
			t.Errorf("pgceiling %s on an unmarked schema: code %d, stderr %q", strings.Join(args, " "), code, stderr)
		}
		oneLine(t, args[0], stderr)
	}
	var v int
	if err := c.QueryRow(context.Background(), `SELECT v FROM pgceiling.mine`).Scan(&v); err != nil || v != 42 {
		t.Errorf("the unmarked schema changed: %v, %v", v, err)
	}
}

func TestInitEmbedded(t *testing.T) {
	stdout, stderr, code := cli(t, nil, "init", "--rows", "2000", "--wallets", "20", "--months", "1")
	if code != 0 || !strings.Contains(stdout, "schema pgceiling created") || !strings.Contains(stdout, "throwaway server is removed") {
		t.Fatalf("init on the embedded server: code %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
}

// closedPort returns a loopback port nothing listens on.
func closedPort(t *testing.T) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	return port
}

// TestInitErrors runs every mistake a newcomer makes: one clear line, the right exit
// code, never the password.
func TestInitErrors(t *testing.T) {
	dsn := pgtest.NewDatabase(t)
	srv := pgtest.Server(t)
	ctx := context.Background()
	c := admin(t, dsn)
	suffix := fmt.Sprint(time.Now().UnixNano() % 1e9)
	pwUser, noCreate := "pgc_pw_"+suffix, "pgc_nocreate_"+suffix
	if _, err := c.Exec(ctx, fmt.Sprintf(`CREATE ROLE %s LOGIN PASSWORD 'right-pw-1'; CREATE ROLE %s LOGIN`, pwUser, noCreate)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c2, err := pgx.Connect(ctx, srv.DSN("postgres"))
		if err == nil {
			c2.Exec(ctx, fmt.Sprintf(`DROP ROLE IF EXISTS %s; DROP ROLE IF EXISTS %s`, pwUser, noCreate))
			c2.Close(ctx)
		}
	})
	requirePassword(t, c, srv.DataDir, pwUser, withUser(t, dsn, pwUser, "wrong-pw-9"))

	bindir := t.TempDir()
	cases := []struct {
		name    string
		env     map[string]string
		args    []string
		code    int
		want    string
		secrets []string
	}{
		{"malformed DSN", nil, []string{"init", "--dsn", "postgres://bob:s3cret-77@localhost:notaport/db"}, 2, "malformed --dsn", []string{"s3cret-77"}},
		{"malformed key=value DSN", nil, []string{"init", "--dsn", "host=localhost password=s3cret-78 port=x"}, 2, "malformed --dsn", []string{"s3cret-78"}},
		{"host unreachable", nil, []string{"init", "--dsn", fmt.Sprintf("postgres://bob:s3cret-79@127.0.0.1:%d/db?sslmode=disable", closedPort(t))}, 1, "connection refused", []string{"s3cret-79"}},
		{"wrong password", nil, []string{"init", "--dsn", withUser(t, dsn, pwUser, "wrong-pw-9")}, 1, "wrong password", []string{"wrong-pw-9"}},
		{"wrong password from PGPASSWORD", map[string]string{"PGPASSWORD": "wrong-pw-8", "PGCEILING_DSN": withUser(t, dsn, pwUser, "")}, []string{"init"}, 1, "wrong password", []string{"wrong-pw-8"}},
		{"database missing", nil, []string{"init", "--dsn", strings.Replace(dsn, "/t_", "/nosuchdb_", 1)}, 1, "does not exist", nil},
		{"no PostgreSQL binaries", map[string]string{EnvPGBinDir: bindir}, []string{"init"}, 1, "no PostgreSQL server binaries", nil},
		{"no permission to create a schema", nil, []string{"init", "--dsn", withUser(t, dsn, noCreate, ""), "--rows", "100"}, 1, "may not create schema pgceiling", nil},
		{"unknown flag", nil, []string{"init", "--rowz", "5"}, 2, "unknown flag: --rowz", nil},
		{"zero rows", nil, []string{"init", "--rows", "0"}, 2, "--rows 0", nil},
		{"negative rows", nil, []string{"init", "--rows", "-5"}, 2, "--rows -5", nil},
		{"several bad values", nil, []string{"init", "--rows", "-5", "--wallets", "1", "--workers", "0"}, 2, "--wallets 1", nil},
		{"drop without a server", nil, []string{"drop"}, 2, "give --dsn", nil},
		{"drop unreachable", nil, []string{"drop", "--dsn", fmt.Sprintf("postgres://127.0.0.1:%d/db", closedPort(t))}, 1, "connection refused", nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			stdout, stderr, code := cli(t, tc.env, tc.args...)
			call := "pgceiling " + strings.Join(tc.args, " ")
			if code != tc.code || !strings.Contains(stderr, tc.want) {
				t.Errorf("%s: code %d, stderr %q; want code %d and %q (stdout %q)", call, code, stderr, tc.code, tc.want, stdout)
			}
			oneLine(t, call, stderr, tc.secrets...)
		})
	}
	// The refused user really could not create anything.
	var n int
	c.QueryRow(ctx, `SELECT count(*) FROM pg_namespace WHERE nspname = 'pgceiling'`).Scan(&n)
	if n != 0 {
		t.Errorf("a failed init left schema pgceiling behind")
	}
}

// requirePassword makes the test server ask user for a password over TCP (the rest
// stays on trust), and waits until the server has reloaded pg_hba.conf.
func requirePassword(t *testing.T, c *pgx.Conn, dataDir, user, wrongDSN string) {
	t.Helper()
	hba := filepath.Join(dataDir, "pg_hba.conf")
	orig, err := os.ReadFile(hba)
	if err != nil {
		t.Fatalf("read pg_hba.conf: %v", err)
	}
	line := fmt.Sprintf("host all %s 127.0.0.1/32 scram-sha-256\n", user)
	if err := os.WriteFile(hba, append([]byte(line), orig...), 0o600); err != nil {
		t.Fatalf("write pg_hba.conf: %v", err)
	}
	t.Cleanup(func() {
		os.WriteFile(hba, orig, 0o600)
		if c2, err := pgx.Connect(context.Background(), strings.Replace(wrongDSN, user+":wrong-pw-9", "postgres", 1)); err == nil {
			c2.Exec(context.Background(), `SELECT pg_reload_conf()`)
			c2.Close(context.Background())
		}
	})
	if _, err := c.Exec(context.Background(), `SELECT pg_reload_conf()`); err != nil {
		t.Fatal(err)
	}
	// The postmaster reloads asynchronously; there is no event to wait for, so try to log
	// in until the password is asked for.
	deadline := time.Now().Add(10 * time.Second)
	for {
		c2, err := pgx.Connect(context.Background(), wrongDSN)
		if err != nil && strings.Contains(err.Error(), "28P01") {
			return
		}
		if c2 != nil {
			c2.Close(context.Background())
		}
		if time.Now().After(deadline) {
			t.Fatalf("the server did not start asking %s for a password: %v", user, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
