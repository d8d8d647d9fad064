package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// tmux runs tmux on the test's own server socket.
func tmux(t *testing.T, socket string, args ...string) string {
	t.Helper()
	out, err := exec.Command("tmux", append([]string{"-L", socket}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("tmux %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// TestRunFitsA100ColumnTerminal runs a short real `pgceiling run` in a tmux pane of 100
// columns, as a person sees it: the live progress (redrawn in place on the terminal) and
// the summary must leave no line wrapped, i.e. the pane captured with wrapped lines
// joined (-J) equals the pane captured line by line, and every line fits 100 columns.
func TestRunFitsA100ColumnTerminal(t *testing.T) {
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Fatalf("tmux is needed for this test (apt-get install tmux): %v", err)
	}
	dsn := runDB(t)
	dir := t.TempDir()
	bin := relBuildBinary(t, dir)
	socket := fmt.Sprintf("pgceiling-test-%d", os.Getpid())
	session := "run"
	t.Cleanup(func() { _ = exec.Command("tmux", "-L", socket, "kill-server").Run() })
	script := filepath.Join(dir, "run.sh")
	// The command runs in the pane; when it ends it signals the test (wait-for) and
	// keeps the pane open reading the terminal, so the output can be captured.
	body := fmt.Sprintf("#!/bin/sh\nunset COLUMNS LINES\nPGCEILING_DSN='%s' '%s' run --workload transfer --rate 50 --warmup 2s --duration 3s --conns 8 --json '%s'\necho \"exit=$?\"\ntmux -L '%s' wait-for -S done\nexec cat\n",
		dsn, bin, filepath.Join(dir, "r.json"), socket)
	if err := os.WriteFile(script, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	tmux(t, socket, "new-session", "-d", "-x", "100", "-y", "50", "-s", session, script)
	done := make(chan error, 1)
	go func() { done <- exec.Command("tmux", "-L", socket, "wait-for", "done").Run() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("tmux wait-for: %v", err)
		}
	case <-time.After(2 * time.Minute):
		t.Fatalf("pgceiling run in tmux did not finish in 2 minutes; pane:\n%s", tmux(t, socket, "capture-pane", "-p", "-t", session))
	}
	if w := strings.TrimSpace(tmux(t, socket, "display-message", "-p", "-t", session, "#{pane_width}")); w != "100" {
		t.Fatalf("the pane is %s columns wide, want 100", w)
	}
	rows := tmux(t, socket, "capture-pane", "-p", "-t", session, "-S", "-", "-E", "-")
	joined := tmux(t, socket, "capture-pane", "-p", "-J", "-t", session, "-S", "-", "-E", "-")
	if !strings.Contains(rows, "exit=0") || !strings.Contains(rows, "pgceiling run: transfer at 50 tx/s") {
		t.Fatalf("the run did not succeed in the pane:\n%s", rows)
	}
	t.Logf("the pane:\n%s", rows)
	rowLines, joinedLines := strings.Split(strings.TrimRight(rows, "\n"), "\n"), strings.Split(strings.TrimRight(joined, "\n"), "\n")
	if len(rowLines) != len(joinedLines) {
		for _, l := range joinedLines {
			if n := len([]rune(strings.TrimRight(l, " "))); n > 100 {
				t.Errorf("a line of %d columns wrapped: %q", n, l)
			}
		}
		t.Errorf("%d rows on screen but %d lines: some lines wrapped", len(rowLines), len(joinedLines))
	}
	for _, l := range rowLines {
		if n := len([]rune(strings.TrimRight(l, " "))); n > 100 {
			t.Errorf("a row of %d columns in a 100-column pane: %q", n, l)
		}
	}
}
