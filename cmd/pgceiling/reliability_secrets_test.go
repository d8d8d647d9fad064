package main

// Secrets (issue 6 item 5): a password given in the URL, in key=value form or in
// PGPASSWORD never appears in stdout, stderr, a results file or a report, after runs that
// succeed and runs that fail.

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/pgceiling/pgceiling/localpg"
)

const (
	secretPW = "Sekr1t-pw-7Q9"
	wrongPW  = "Wr0ng-pw-4K2"
)

// scramServer starts a server of the test's own on which the role tester must log in
// over TCP with a SCRAM password; postgres stays trusted for the test's own checks.
func scramServer(t *testing.T) *localpg.Server {
	t.Helper()
	s := relServer(t, localpg.Options{Settings: map[string]string{"password_encryption": "scram-sha-256"}})
	hba := "local all all trust\nhost all tester 127.0.0.1/32 scram-sha-256\nhost all all 127.0.0.1/32 trust\n"
	if err := os.WriteFile(filepath.Join(s.DataDir, "pg_hba.conf"), []byte(hba), 0o600); err != nil {
		t.Fatalf("write pg_hba.conf: %v", err)
	}
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, s.DSN("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	for _, q := range []string{
		fmt.Sprintf("CREATE ROLE tester LOGIN SUPERUSER PASSWORD '%s'", secretPW),
		"CREATE DATABASE rel OWNER tester",
		"SELECT pg_reload_conf()",
	} {
		if _, err := conn.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	return s
}

func TestReliabilitySecrets(t *testing.T) {
	s := scramServer(t)
	url := func(pw string) string {
		return fmt.Sprintf("postgres://tester:%s@127.0.0.1:%d/rel?sslmode=disable", pw, s.Port)
	}
	kv := func(pw string) string {
		return fmt.Sprintf("host=127.0.0.1 port=%d user=tester password=%s dbname=rel sslmode=disable", s.Port, pw)
	}
	bare := fmt.Sprintf("postgres://tester@127.0.0.1:%d/rel?sslmode=disable", s.Port)
	dir := t.TempDir()
	var files []string // every results file and report written, grepped at the end
	var outputs []string
	n := 0
	try := func(env map[string]string, wantOK bool, args ...string) {
		t.Helper()
		stdout, stderr, code := cli(t, env, args...)
		outputs = append(outputs, stdout, stderr)
		if wantOK && code != 0 || !wantOK && code == 0 {
			t.Errorf("pgceiling %s: exit %d (want success %v); stderr:\n%s", redactTest(args), code, wantOK, stderr)
		}
		if !wantOK {
			checkOneLine(t, "pgceiling "+redactTest(args), stderr)
		}
	}
	tiny := []string{"--warmup", "0s", "--duration", "1s", "--conns", "3"}
	for _, form := range []struct {
		name       string
		dsn, wrong string
		pgpassword string
	}{
		{"url", url(secretPW), url(wrongPW), ""},
		{"key=value", kv(secretPW), kv(wrongPW), ""},
		{"PGPASSWORD", bare, bare, secretPW},
	} {
		env := map[string]string{}
		wrongEnv := map[string]string{}
		if form.pgpassword != "" {
			// pgx reads PGPASSWORD from the process environment; the CLI's Env from the map.
			t.Setenv("PGPASSWORD", secretPW)
			env["PGPASSWORD"] = secretPW
			wrongEnv["PGPASSWORD"] = wrongPW
		}
		n++
		js := filepath.Join(dir, fmt.Sprintf("%d", n))
		if n == 1 {
			try(env, true, "init", "--dsn", form.dsn, "--rows", "2000", "--wallets", "50", "--months", "1", "--workers", "1")
		}
		// Runs that succeed.
		try(env, true, append([]string{"run", "--dsn", form.dsn, "--workload", "insert", "--rate", "30", "--json", js + "-run.json"}, tiny...)...)
		try(env, true, "inspect", "--dsn", form.dsn)
		try(env, true, append([]string{"search", "--hold", "off", "--dsn", form.dsn, "--workload", "insert", "--sync-commit", "off", "--start-rate", "30",
			"--growth", "4", "--precision", "0.9", "--max-probes", "2", "--json", js + "-search.json", "--report", js + "-report"}, tiny...)...)
		try(env, true, "report", js+"-run.json", "--out", js+"-report-run")
		files = append(files, js+"-run.json", js+"-search.json", js+"-report", js+"-report-run")
		// Runs that fail: a failing probe (every arrival rejected), a bad flag after the
		// DSN, a malformed DSN carrying the password, and the wrong password.
		try(env, true, "run", "--dsn", form.dsn, "--workload", "insert", "--rate", "3000", "--conns", "1", "--pool-wait", "1ms",
			"--warmup", "0s", "--duration", "1s", "--json", js+"-failing.json")
		files = append(files, js+"-failing.json")
		try(env, false, "run", "--dsn", form.dsn, "--bogus-flag", "--rate", "10")
		try(env, false, "search", "--dsn", form.dsn, "--precision", "7")
		try(env, false, "run", "--dsn", strings.Replace(form.dsn, "127.0.0.1", "127.0.0.1:notaport", 1), "--rate", "10")
		// Mistyped flags that echo the argument (issue 13): one dash, and a config file
		// line with a colon instead of `=`.
		try(env, false, "run", "-dsn="+form.dsn, "--rate", "10")
		try(env, false, "search", "-dsn", form.dsn)
		conf := filepath.Join(dir, fmt.Sprintf("%d-colon.conf", n))
		if err := os.WriteFile(conf, []byte("rate = 10\ndsn: "+form.dsn+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		try(env, false, "run", "--config", conf)
		for _, c := range [][]string{
			append([]string{"run", "--dsn", form.wrong, "--rate", "10"}, tiny...),
			{"init", "--dsn", form.wrong, "--rows", "100"},
			{"inspect", "--dsn", form.wrong},
			{"drop", "--dsn", form.wrong},
			append([]string{"search", "--dsn", form.wrong, "--json", js + "-wrong.json", "--max-probes", "1"}, tiny...),
		} {
			if form.pgpassword != "" {
				t.Setenv("PGPASSWORD", wrongPW)
			}
			stdout, stderr, code := cli(t, wrongEnv, c...)
			outputs = append(outputs, stdout, stderr)
			if code != 1 || !strings.Contains(stderr, "password") {
				t.Errorf("%s, wrong password, pgceiling %s: exit %d, stderr %q; want 1 and a message about the password",
					form.name, redactTest(c), code, stderr)
			}
			checkOneLine(t, "wrong password "+redactTest(c), stderr)
			if form.pgpassword != "" {
				t.Setenv("PGPASSWORD", secretPW)
			}
		}
		files = append(files, js+"-wrong.json")
	}
	// Also through PGCEILING_DSN.
	try(map[string]string{"PGCEILING_DSN": url(secretPW)}, true,
		append([]string{"run", "--workload", "insert", "--rate", "30", "--json", filepath.Join(dir, "env-run.json")}, tiny...)...)
	files = append(files, filepath.Join(dir, "env-run.json"))

	for i, o := range outputs {
		for _, pw := range []string{secretPW, wrongPW} {
			if strings.Contains(o, pw) {
				t.Errorf("output %d shows a password: %q", i, o)
			}
		}
	}
	checked := 0
	for _, f := range files {
		_ = filepath.Walk(f, func(path string, info os.FileInfo, err error) error {
			if err != nil || info.IsDir() {
				return nil
			}
			b, err := os.ReadFile(path)
			if err != nil {
				t.Errorf("read %s: %v", path, err)
				return nil
			}
			checked++
			for _, pw := range []string{secretPW, wrongPW} {
				if strings.Contains(string(b), pw) {
					t.Errorf("%s holds a password", path)
				}
			}
			return nil
		})
	}
	if checked < 10 {
		t.Errorf("only %d result and report files were written to check; want every run's", checked)
	}
	t.Logf("%d outputs and %d files checked for the password", len(outputs), checked)
}

// redactTest hides the test's passwords in a command line printed by a failing test.
func redactTest(args []string) string {
	s := fmt.Sprintf("%q", args)
	return strings.NewReplacer(secretPW, "SECRET", wrongPW, "WRONG").Replace(s)
}
