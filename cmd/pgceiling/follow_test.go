package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestRunTwoDrivers: pgceiling run --drivers 2 with a pgceiling follow beside it (two
// commands on the test server): one merged probe whose books balance, whose rows and
// money checks hold across both drivers, and a follower that exits 0 when the run ends.
func TestRunTwoDrivers(t *testing.T) {
	dsn := runDB(t)
	env := map[string]string{"PGCEILING_DSN": dsn}
	type out struct {
		stderr string
		code   int
	}
	done := make(chan out, 1)
	go func() {
		_, stderr, code := cli(t, env, "follow", "--fleet", "cli", "--join-timeout", "1m")
		done <- out{stderr, code}
	}()
	path := filepath.Join(t.TempDir(), "run.json")
	_, stderr, code := cli(t, env, "run", "--drivers", "2", "--fleet", "cli", "--workload", "transfer", "--rate", "120",
		"--warmup", "500ms", "--duration", "2s", "--conns", "8", "--json", path)
	f := <-done
	if code != 0 {
		t.Fatalf("pgceiling run --drivers 2: code %d, stderr %q", code, stderr)
	}
	if f.code != 0 || !strings.Contains(f.stderr, "the leader ended the run") {
		t.Errorf("pgceiling follow: code %d, stderr %q", f.code, f.stderr)
	}
	p := readRun(t, path)
	if p.Fleet == nil || len(p.Fleet.Parts) != 2 || p.Fleet.Parts[1].Committed == 0 {
		t.Fatalf("fleet %+v: want two drivers that both committed", p.Fleet)
	}
	if !p.Balanced() || !p.Checks.RowsOK || p.Checks.BalanceOK == nil || !*p.Checks.BalanceOK || p.TargetRate != 120 {
		t.Errorf("merged probe: target %v scheduled %d committed %d checks %+v: want balanced books, rows and money conserved",
			p.TargetRate, p.Scheduled, p.Committed, p.Checks)
	}
	if strings.Contains(stderr+f.stderr, "password") {
		t.Error("a password in the output")
	}
}
