// Command pgceiling measures the real write ceiling of a PostgreSQL server.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/spf13/pflag"
	"golang.org/x/term"

	"github.com/pgceiling/pgceiling/config"
	"github.com/pgceiling/pgceiling/result"
)

// Env is the process's I/O, passed to every command so commands are testable and
// packages never print.
type Env struct {
	Stdout, Stderr io.Writer
	Getenv         func(string) string
	// TTY is true when stderr is a terminal: progress is drawn in place, else printed as
	// plain periodic lines.
	TTY bool
	// Args is the whole command line, for the results file (redacted before writing).
	Args []string
	// Width is the terminal's width in columns that text and tables fit (0: 100).
	Width int
	// quiet drops progress and announcements (--quiet); warnings and errors still print.
	quiet bool
	// textToStderr sends the human text to stderr: stdout carries JSON (--json -).
	textToStderr bool
	// flagSets, when set, collects the flag sets the command makes (flagsOf).
	flagSets *[]*pflag.FlagSet
	// signal records the signal that interrupted the command (0 when none).
	signal atomic.Int32
	// secrets are scrubbed from every message the CLI prints.
	secrets []string
	// cleanups run when a second signal forces an immediate exit (e.g. removing the
	// embedded server), since deferred calls do not run then.
	mu       sync.Mutex
	cleanups []func()
	// metricsClosing, a test's hook, is called with the metrics' URL before the
	// --metrics-addr server stops, once the command's last books are in.
	metricsClosing func(url string)
}

// atForcedExit registers f to run if a second signal forces an immediate exit.
func (e *Env) atForcedExit(f func()) {
	e.mu.Lock()
	e.cleanups = append(e.cleanups, f)
	e.mu.Unlock()
}

func (e *Env) runCleanups() {
	e.mu.Lock()
	fs := e.cleanups
	e.cleanups = nil
	e.mu.Unlock()
	for i := len(fs) - 1; i >= 0; i-- {
		fs[i]()
	}
}

// Interrupted reports whether a signal stopped the command.
func (e *Env) Interrupted() bool { return e.signal.Load() != 0 }

// command is one sub-command.
type command struct {
	name    string
	summary string
	run     func(ctx context.Context, env *Env, args []string) error
}

var commands []command

func register(c command) { commands = append(commands, c) }

func main() {
	env := &Env{Stdout: os.Stdout, Stderr: os.Stderr, Getenv: os.Getenv,
		TTY: term.IsTerminal(int(os.Stderr.Fd())), Args: os.Args}
	env.Width = columns(os.Getenv, func() (int, bool) {
		for _, f := range []*os.File{os.Stdout, os.Stderr} {
			if w, _, err := term.GetSize(int(f.Fd())); err == nil && w > 0 {
				return w, true
			}
		}
		return 0, false
	})
	ctx, cancel := context.WithCancel(context.Background())
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go func() {
		s := <-sigs
		env.signal.Store(int32(s.(syscall.Signal)))
		fmt.Fprintf(env.Stderr, "\npgceiling: %s received: stopping, keeping what was measured (again to quit at once)\n", s)
		cancel()
		s = <-sigs
		env.runCleanups()
		os.Exit(exitCodeFor(s.(syscall.Signal)))
	}()
	code := Main(ctx, env, os.Args[1:])
	cancel()
	os.Exit(code)
}

func exitCodeFor(s syscall.Signal) int { return 128 + int(s) }

// The exit codes besides 0 (success) and 128+signal (interrupted).
const (
	exitError     = 1 // runtime error
	exitUsage     = 2 // usage error: bad flag, value or argument
	exitThreshold = 3 // a threshold the user set was broken (run --fail-on-error-rate/--p99-slo, compare --fail-if-*, claim not held)
)

// Main runs one command line and returns the process exit code: 0 success, 1 runtime
// error, 2 usage error, 3 a threshold broken, 128+signal when interrupted.
func Main(ctx context.Context, env *Env, args []string) int {
	env.secrets = secretsFrom(args, env.Getenv)
	err := dispatch(ctx, env, args)
	if s := env.signal.Load(); s != 0 {
		if err != nil && !errors.Is(err, context.Canceled) {
			env.printErr(err)
		}
		return exitCodeFor(syscall.Signal(s))
	}
	switch {
	case err == nil, errors.Is(err, pflag.ErrHelp):
		return 0
	case config.IsUsage(err):
		env.printErr(err)
		return exitUsage
	case config.IsThreshold(err):
		env.printErr(err)
		return exitThreshold
	default:
		env.printErr(err)
		return exitError
	}
}

// printErr prints err on one line, scrubbed of every known password.
func (e *Env) printErr(err error) {
	msg := strings.ReplaceAll(strings.TrimSpace(err.Error()), "\n", " ")
	fmt.Fprintf(e.Stderr, "pgceiling: %s\n", config.RedactText(e.Scrub(msg)))
}

// Scrub removes every known password from s.
func (e *Env) Scrub(s string) string { return config.Scrub(s, e.secrets) }

// secretsFrom finds passwords on the command line and in the environment: in --dsn's
// value, and in any argument that holds a URL with a password or a password=, wherever
// it stands (a DSN given as `-dsn=…` or as a stray argument is still a secret).
func secretsFrom(args []string, getenv func(string) string) []string {
	dsns := []string{getenv(config.EnvDSN)}
	for i, a := range args {
		switch {
		case strings.HasPrefix(a, "--dsn="):
			dsns = append(dsns, strings.TrimPrefix(a, "--dsn="))
		case a == "--dsn" && i+1 < len(args):
			dsns = append(dsns, args[i+1])
		case strings.Contains(a, "://") || strings.Contains(strings.ToLower(a), "password"):
			dsns = append(dsns, a)
		}
	}
	var out []string
	for _, d := range dsns {
		out = append(out, config.Passwords(d, getenv)...)
	}
	if len(out) == 0 {
		out = config.Passwords("", getenv)
	}
	return out
}

func dispatch(ctx context.Context, env *Env, args []string) error {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		if len(args) > 1 && args[0] == "help" {
			return dispatch(ctx, env, []string{args[1], "--help"})
		}
		usage(env.Stdout, env.width())
		return nil
	}
	if args[0] == "--version" || args[0] == "-V" {
		printVersion(env.Stdout)
		return nil
	}
	for _, c := range commands {
		if c.name == args[0] {
			return c.run(ctx, env, args[1:])
		}
	}
	names := make([]string, len(commands))
	for i, c := range commands {
		names[i] = c.name
	}
	msg := fmt.Sprintf("unknown command %q (commands: %s; see `pgceiling --help`)", args[0], strings.Join(names, ", "))
	if s := config.Suggest(args[0], names); s != "" {
		msg = fmt.Sprintf("unknown command %q; did you mean %q? (see `pgceiling --help`)", args[0], s)
	}
	return config.Usagef("%s", msg)
}

const intro = `An open-loop Poisson driver fires realistic OLTP-write and banking-transfer transactions at a pre-filled, partitioned, Zipf-accessed schema; an adaptive search finds the knee (the highest rate held with almost no errors) under both synchronous_commit settings.

Without --dsn (or PGCEILING_DSN) every command runs on a throwaway PostgreSQL started from the server binaries on this machine and removed afterwards.`

func usage(w io.Writer, width int) {
	fmt.Fprintf(w, "%s\n\n", reflow("pgceiling "+result.ToolVersion+": find the real write ceiling of a PostgreSQL server.", width))
	fmt.Fprintf(w, "%s\n\nUsage:\n  pgceiling COMMAND [flags]\n  pgceiling --version\n\nCommands:\n", reflow(intro, width))
	for _, c := range sortedCommands() {
		lines := wrapWords(c.summary, width-14)
		for i, l := range lines {
			name := ""
			if i == 0 {
				name = c.name
			}
			fmt.Fprintf(w, "  %-11s %s\n", name, l)
		}
	}
	fmt.Fprintf(w, "\n%s\n", reflow(`Run 'pgceiling COMMAND --help' for a command's flags and their defaults.
Exit codes: 0 ok, 1 runtime error, 2 usage error, 3 a threshold you set was broken (run --fail-on-error-rate or --p99-slo, compare --fail-if-knee-drops or --fail-if-p99-rises, a claim that did not hold; the results are still written), 130/143 interrupted (results kept).`, width))
}

// sortedCommands lists the commands in the order help shows them.
func sortedCommands() []command {
	sorted := append([]command(nil), commands...)
	sort.SliceStable(sorted, func(i, j int) bool { return order(sorted[i].name) < order(sorted[j].name) })
	return sorted
}

func order(name string) int {
	for i, n := range []string{"search", "run", "claim", "plan", "compare", "init", "drop", "inspect", "report", "completion", "version"} {
		if n == name {
			return i
		}
	}
	return 99
}

// newFlagSet makes a command's flag set with a --help that lists every flag with its default.
func newFlagSet(env *Env, name, synopsis string) *pflag.FlagSet {
	fs := pflag.NewFlagSet(name, pflag.ContinueOnError)
	fs.SortFlags = false
	if env.flagSets != nil {
		*env.flagSets = append(*env.flagSets, fs)
	}
	fs.Usage = func() {
		fmt.Fprintf(env.Stdout, "Usage: pgceiling %s [flags]\n\n%s\n\nFlags:\n%s", name,
			reflow(synopsis, env.width()), fs.FlagUsagesWrapped(env.width()))
	}
	return fs
}

// parse parses a command's flags; on --help pflag prints the usage and it returns
// pflag.ErrHelp.
func parse(fs *pflag.FlagSet, args []string) error {
	err := config.Parse(fs, args)
	if err == nil && fs.NArg() > 0 {
		return config.Usagef("%s: unexpected argument %q (see `pgceiling %s --help`)", fs.Name(), fs.Arg(0), fs.Name())
	}
	return err
}

// tuneGC trades a little memory for less garbage-collection CPU on the driver's side of
// the comparison, and keeps the process's memory flat: the live heap is small and mostly
// fixed (about 0.5 MiB of histograms and buffers a connection), so the collector runs at
// GOGC=400 under a soft memory limit of 20 MiB + 0.5 MiB a connection. Measured at 450
// tx/s of oltp with 50 connections: peak RSS 46 instead of 59 MB over a minute, and no
// more client CPU. GOGC or GOMEMLIMIT in the environment win.
func tuneGC(env *Env, conns int) {
	if env.Getenv("GOGC") != "" || env.Getenv("GOMEMLIMIT") != "" {
		return
	}
	debug.SetGCPercent(400)
	debug.SetMemoryLimit(int64(20<<20 + conns*(512<<10)))
}
