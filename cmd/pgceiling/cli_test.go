package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/pgceiling/pgceiling/driver"
	"github.com/pgceiling/pgceiling/result"
)

// cliWidth is cli with the terminal width set to width.
func cliWidth(t *testing.T, width int, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errb bytes.Buffer
	e := &Env{Stdout: &out, Stderr: &errb, Getenv: func(string) string { return "" }, Width: width,
		Args: append([]string{"pgceiling"}, args...)}
	code = Main(context.Background(), e, args)
	return out.String(), errb.String(), code
}

func TestColumns(t *testing.T) {
	for _, tc := range []struct {
		columns string
		term    int // 0: not a terminal
		want    int
	}{
		{"", 0, 100}, {"80", 0, 80}, {"80", 132, 80}, {"", 132, 132}, {"abc", 0, 100}, {"-3", 0, 100}, {"10", 0, 40},
	} {
		got := columns(func(k string) string {
			if k == "COLUMNS" {
				return tc.columns
			}
			return ""
		}, func() (int, bool) { return tc.term, tc.term > 0 })
		if got != tc.want {
			t.Errorf("columns(COLUMNS=%q, terminal %d) = %d, want %d", tc.columns, tc.term, got, tc.want)
		}
	}
}

func TestFill(t *testing.T) {
	s := "the quick brown fox jumps over the lazy dog and a-very-long-word-that-does-not-fit-anywhere-at-all"
	for _, width := range []int{20, 30, 50} {
		lines := wrapWords(s, width)
		for i, l := range lines {
			limit := width
			if i > 0 {
				limit = width - 4
			}
			if len(l) > limit {
				t.Errorf("wrapWords(width %d) line %d %q is %d long", width, i, l, len(l))
			}
		}
		if got := strings.Join(strings.Fields(strings.Join(lines, " ")), ""); got != strings.Join(strings.Fields(s), "") {
			t.Errorf("wrapWords(width %d) lost text: %q", width, lines)
		}
	}
	text := "one two three four five six seven\neight nine ten\n\n  an indented line keeps its indent\nand more words"
	got := reflow(text, 21)
	want := "one two three four\nfive six seven eight\nnine ten\n\n  an indented line\n      keeps its indent\nand more words"
	if got != want {
		t.Errorf("reflow(width 21) =\n%s\nwant\n%s", got, want)
	}
}

func TestVersionText(t *testing.T) {
	bi := &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Path: "github.com/pgceiling/pgceiling", Version: "v1.2.3"},
		Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "0123456789abcdef0123"}, {Key: "vcs.time", Value: "2026-12-03T10:00:00Z"},
			{Key: "vcs.modified", Value: "true"}}}
	if got, want := versionText(bi), "pgceiling v1.2.3, revision 0123456789ab (2026-12-03T10:00:00Z), modified, built with go1.26.8; results format 1"; got != want {
		t.Errorf("versionText = %q, want %q", got, want)
	}
	bi = &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}
	if got := versionText(bi); got != "pgceiling "+result.ToolVersion+"; results format 1" {
		t.Errorf("versionText(devel, no VCS) = %q", got)
	}
	if got := versionText(nil); !strings.HasPrefix(got, "pgceiling "+result.ToolVersion) {
		t.Errorf("versionText(nil) = %q", got)
	}
	for _, args := range [][]string{{"version"}, {"--version"}} {
		stdout, _, code := cli(t, nil, args...)
		if code != 0 || !strings.HasPrefix(stdout, "pgceiling ") || !strings.Contains(stdout, "results format") {
			t.Errorf("pgceiling %v: code %d, stdout %q", args, code, stdout)
		}
	}
	stdout, _, _ := cli(t, nil, "--help")
	for _, w := range []string{"\n  version ", "--version", "\n  compare ", "\n  completion ", "3 a threshold"} {
		if !strings.Contains(stdout, w) {
			t.Errorf("pgceiling --help does not list %q:\n%s", w, stdout)
		}
	}
}

// TestHelpFitsWidth: every command's help fits 100 and 60 columns, and value names say
// what a flag takes (--config FILE, not the backquoted words of a usage string).
func TestHelpFitsWidth(t *testing.T) {
	for _, width := range []int{100, 60} {
		for _, args := range [][]string{{"--help"}, {"search", "--help"}, {"run", "--help"}, {"init", "--help"},
			{"inspect", "--help"}, {"drop", "--help"}, {"report", "--help"}, {"compare", "--help"}, {"completion", "--help"}, {"version", "--help"}} {
			stdout, _, code := cliWidth(t, width, args...)
			if code != 0 || stdout == "" {
				t.Errorf("pgceiling %v: code %d, no help", args, code)
			}
			for _, l := range strings.Split(stdout, "\n") {
				if len([]rune(l)) > width {
					t.Errorf("pgceiling %v at %d columns: line of %d: %q", args, width, len([]rune(l)), l)
				}
			}
		}
	}
	stdout, _, _ := cliWidth(t, 100, "run", "--help")
	for _, w := range []string{"--config FILE", "--json FILE", "--summary-json FILE", "--progress N", "--fail-on-error-rate R", "--p99-slo duration", "--quiet", "--wide"} {
		if !strings.Contains(stdout, w) {
			t.Errorf("run --help lacks %q", w)
		}
	}
	if regexp.MustCompile(`--config name`).MatchString(stdout) {
		t.Errorf("run --help shows a usage string's backquoted words as --config's value name")
	}
	stdout, _, _ = cliWidth(t, 100, "search", "--help")
	for _, w := range []string{"--config FILE", "--report DIR", "--resume FILE", "--start-from FILE"} {
		if !strings.Contains(stdout, w) {
			t.Errorf("search --help lacks %q", w)
		}
	}
}

func TestLiveText(t *testing.T) {
	warm := driver.Live{Elapsed: 300 * time.Millisecond, Phase: result.PhaseWarmup}
	got := liveText("", warm, 200)
	for _, w := range []string{"warmup", "last 1s: offered -/s, committed -/s", "p99 -", "so far: 0 committed, 0 errors"} {
		if !strings.Contains(got, w) {
			t.Errorf("liveText(start of warm-up) = %q, lacks %q", got, w)
		}
	}
	if strings.Contains(got, "0.0 ms") {
		t.Errorf("liveText(start of warm-up) = %q shows a p99 nothing measured", got)
	}
	v := driver.Live{Elapsed: 42 * time.Second, Phase: result.PhaseMeasure, OfferedRate: 1203, AchievedRate: 1198.4, P99Ms: 14.25,
		Queue: 3, Errors: 12, Committed: 48310}
	const prefix = "  sweep 1/4 oltp sync=on "
	got = liveText(prefix, v, 200)
	want := prefix + "  42s measure | last 1s: offered 1,203/s, committed 1,198/s, p99 14.2 ms | queue 3 | so far: 48,310 committed, 12 errors"
	if got != want {
		t.Errorf("liveText(wide) =\n%q\nwant\n%q", got, want)
	}
	for _, width := range []int{99, 79, 59, 39, 10} {
		got := liveText(prefix, v, width)
		if len(got) > width {
			t.Errorf("liveText(width %d) = %q (%d)", width, got, len(got))
		}
	}
	// What goes last: the total committed, then the queue, then the errors, then p99.
	if got := liveText("", v, 99); got != "  42s measure | last 1s: offered 1,203/s, committed 1,198/s, p99 14.2 ms | so far: 12 errors" {
		t.Errorf("liveText(run, 99) = %q: want the p99 and the errors kept", got)
	}
	if got := liveText(prefix, v, 99); !strings.HasSuffix(got, "p99 14.2 ms") {
		t.Errorf("liveText(search, 99) = %q: want the p99 kept", got)
	}
}

func TestCompletion(t *testing.T) {
	stdout, stderr, code := cli(t, nil, "completion", "bash")
	if code != 0 {
		t.Fatalf("completion bash: code %d, %s", code, stderr)
	}
	path := filepath.Join(t.TempDir(), "pgceiling.bash")
	if err := os.WriteFile(path, []byte(stdout), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("bash", "-n", path).CombinedOutput(); err != nil {
		t.Errorf("bash -n on the completion script: %v\n%s", err, out)
	}
	// Completing the first word offers every command; after a command, its flags.
	script := stdout + `
COMP_WORDS=(pgceiling ""); COMP_CWORD=1; _pgceiling; echo "${COMPREPLY[*]}"
COMP_WORDS=(pgceiling run --fail); COMP_CWORD=2; _pgceiling; echo "${COMPREPLY[*]}"
`
	out, err := exec.Command("bash", "-c", script).CombinedOutput()
	if err != nil {
		t.Fatalf("running the completion: %v\n%s", err, out)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != 2 {
		t.Fatalf("completion output %q", out)
	}
	first := strings.Fields(lines[0])
	for _, c := range commands {
		if !strings.Contains(" "+lines[0]+" ", " "+c.name+" ") {
			t.Errorf("bash completion of the first word %v lacks command %s", first, c.name)
		}
	}
	if lines[1] != "--fail-on-error-rate" {
		t.Errorf("bash completion of `run --fail` = %q, want --fail-on-error-rate", lines[1])
	}
	for _, sh := range []string{"zsh", "fish"} {
		stdout, _, code := cli(t, nil, "completion", sh)
		for _, c := range commands {
			if code != 0 || !strings.Contains(stdout, c.name) {
				t.Errorf("completion %s: code %d, no command %s", sh, code, c.name)
			}
		}
		if !strings.Contains(stdout, "summary-json") {
			t.Errorf("completion %s lacks the flag summary-json", sh)
		}
	}
	if _, stderr, code := cli(t, nil, "completion", "tcsh"); code != 2 || !strings.Contains(stderr, "bash, zsh, fish") {
		t.Errorf("completion tcsh: code %d, %q", code, stderr)
	}
}

// allFlags maps every flag name of every command (and the top level's) to the commands
// that have it.
func allFlags(t *testing.T) map[string][]string {
	t.Helper()
	out := map[string][]string{"help": {"all"}, "version": {"top"}}
	for _, c := range commands {
		fs := flagsOf(context.Background(), c)
		if fs == nil {
			t.Fatalf("command %s made no flag set", c.name)
		}
		fs.VisitAll(func(f *pflag.Flag) { out[f.Name] = append(out[f.Name], c.name) })
	}
	return out
}

// docFlags returns the pgceiling flags the Markdown text mentions: in prose and in code,
// except in code that runs another tool (a bench script, pgbench, pg_config, docker)
// before any pgceiling command, or a code span right after prose naming pgbench.
func docFlags(text string) []string {
	flagRE := regexp.MustCompile(`(?:^|[\s(\[` + "`" + `|,])(--[a-z][a-z0-9-]+)`)
	foreign := regexp.MustCompile(`bench/|pgbench|pg_config|docker|psql|initdb|pg_ctl`)
	invocation := regexp.MustCompile(`(?:^|[\s/])pgceiling\s`)
	var out []string
	take := func(s string) {
		for _, m := range flagRE.FindAllStringSubmatch(s, -1) {
			out = append(out, strings.TrimPrefix(m[1], "--"))
		}
	}
	// code takes the flags of one piece of code: those after a pgceiling command, all of
	// them when no other tool runs.
	code := func(s string) {
		if idx := invocation.FindStringIndex(s); idx != nil {
			take(s[idx[0]:])
		} else if !foreign.MatchString(s) {
			take(s)
		}
	}
	spans := regexp.MustCompile("(?s)```.*?```|`[^`]+`")
	last := 0
	for _, loc := range spans.FindAllStringIndex(text, -1) {
		take(text[last:loc[0]])
		last = loc[1]
		span := text[loc[0]:loc[1]]
		if strings.HasPrefix(span, "```") {
			for _, line := range strings.Split(span, "\n") {
				code(line)
			}
			continue
		}
		if before := text[max(loc[0]-12, 0):loc[0]]; strings.Contains(before, "pgbench") {
			continue // pgbench's own flag, e.g. pgbench's `--latency-limit`
		}
		code(span)
	}
	take(text[last:])
	return out
}

// TestDocsInSyncWithHelp: every pgceiling flag README.md and docs/*.md mention exists in
// some command's flag set, every flag of every command is documented somewhere, and the
// README's two set-up commands are the scripts CI runs.
func TestDocsInSyncWithHelp(t *testing.T) {
	flags := allFlags(t)
	// The docs also describe the benchmark scripts (bench/*.sh): their flags are the
	// options they parse.
	benchFlags := map[string]bool{}
	scripts, _ := filepath.Glob("../../bench/*.sh")
	for _, sc := range scripts {
		b, err := os.ReadFile(sc)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range regexp.MustCompile(`(--[a-z][a-z0-9-]+)\)`).FindAllSubmatch(b, -1) {
			benchFlags[strings.TrimPrefix(string(m[1]), "--")] = true
		}
	}
	if len(benchFlags) == 0 {
		t.Fatal("no flags found in bench/*.sh")
	}
	files, _ := filepath.Glob("../../docs/*.md")
	files = append(files, "../../README.md")
	documented := map[string]bool{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range docFlags(string(b)) {
			documented[name] = true
			if _, ok := flags[name]; !ok && !benchFlags[name] {
				t.Errorf("%s mentions --%s, which no pgceiling command has (see pgceiling COMMAND --help)", filepath.Base(f), name)
			}
		}
	}
	if len(documented) < 40 {
		t.Errorf("the docs mention only %d flags: the parser lost them", len(documented))
	}
	for name, cmds := range flags {
		if !documented[name] {
			t.Errorf("--%s (%v) is in --help but in neither README.md nor docs/", name, cmds)
		}
	}

	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	block := regexp.MustCompile("(?s)## Quick start.*?```sh\n(.*?)```").FindSubmatch(readme)
	if block == nil {
		t.Fatal("README.md has no Quick start block of commands")
	}
	var cmds []string
	for _, l := range strings.Split(strings.TrimSpace(string(block[1])), "\n") {
		cmds = append(cmds, strings.Fields(l)[0]+" "+strings.Join(strings.Fields(strings.SplitN(l, "#", 2)[0])[1:], " "))
	}
	if len(cmds) != 2 || cmds[0] != "./scripts/pgceiling search" || cmds[1] != "./scripts/test " {
		t.Fatalf("README's set-up commands are %q, want ./scripts/pgceiling search and ./scripts/test", cmds)
	}
	for _, c := range cmds {
		st, err := os.Stat(filepath.Join("../..", strings.Fields(c)[0]))
		if err != nil || st.Mode()&0o111 == 0 {
			t.Errorf("README's command %s: not an executable script (%v)", c, err)
		}
	}
	if !slices.ContainsFunc(commands, func(c command) bool { return c.name == "search" }) {
		t.Errorf("README runs `pgceiling search`, which is not a command")
	}
	ci, err := os.ReadFile("../../.ci/run")
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`(?m)^exec bash scripts/test\s*$`).Match(ci) {
		t.Errorf(".ci/run does not run exactly scripts/test, README's test command:\n%s", ci)
	}
}
