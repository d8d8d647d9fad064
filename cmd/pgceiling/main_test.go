package main

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"

	"github.com/pgceiling/pgceiling/internal/pgtest"
	"github.com/pgceiling/pgceiling/localpg"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m, localpg.Options{})) }

// cli runs one pgceiling command line in-process and returns its output and exit code.
// env holds extra environment variables (PGCEILING_DSN, PGPASSWORD, ...); nothing is read
// from the real environment.
func cli(t *testing.T, env map[string]string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errb bytes.Buffer
	e := &Env{Stdout: &out, Stderr: &errb, Getenv: func(k string) string { return env[k] },
		Args: append([]string{"pgceiling"}, args...)}
	code = Main(context.Background(), e, args)
	return out.String(), errb.String(), code
}

func TestUnknownCommand(t *testing.T) {
	_, stderr, code := cli(t, nil, "serach")
	if code != 2 || !strings.Contains(stderr, `did you mean "search"`) && !strings.Contains(stderr, "unknown command") {
		t.Errorf("pgceiling serach: code %d, stderr %q; want 2 and a suggestion", code, stderr)
	}
	if strings.Count(strings.TrimSpace(stderr), "\n") != 0 {
		t.Errorf("pgceiling serach: want one line on stderr, got %q", stderr)
	}
}

func TestHelp(t *testing.T) {
	stdout, _, code := cli(t, nil, "--help")
	if code != 0 || !strings.Contains(stdout, "Usage:") {
		t.Errorf("pgceiling --help: code %d, stdout %q", code, stdout)
	}
}
