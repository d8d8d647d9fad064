package config

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"

	"github.com/spf13/pflag"
)

// ApplyFile reads a config file of `name = value` lines (flag names without the dashes;
// `#` starts a comment) and sets each flag that was not given on the command line, so
// flags override the file. An unknown key is a usage error naming the valid keys.
func ApplyFile(fs *pflag.FlagSet, path string) error {
	f, err := os.Open(path)
	if err != nil {
		return Usagef("config file: %v", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	n := 0
	for sc.Scan() {
		n++
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		key, val, ok := strings.Cut(line, "=")
		if !ok {
			return Usagef("config file %s line %d: want `name = value`, got %q", path, n, RedactText(line))
		}
		key, val = strings.TrimSpace(key), strings.Trim(strings.TrimSpace(val), `"`)
		fl := fs.Lookup(key)
		if fl == nil || key == "config" {
			return Usagef("config file %s line %d: unknown key %q (valid keys: %s)", path, n, RedactText(key), flagNames(fs))
		}
		if fl.Changed {
			continue
		}
		if err := fs.Set(key, val); err != nil {
			return Usagef("config file %s line %d: %s: %s", path, n, key, RedactText(err.Error()))
		}
	}
	if err := sc.Err(); err != nil {
		return Usagef("config file %s: %v", path, err)
	}
	return nil
}

func flagNames(fs *pflag.FlagSet) string {
	var names []string
	fs.VisitAll(func(f *pflag.Flag) {
		if f.Name != "config" && f.Name != "help" {
			names = append(names, f.Name)
		}
	})
	sort.Strings(names)
	return strings.Join(names, ", ")
}

// Parse parses args into fs, then applies the --config file if the flag set has one and
// it was given. pflag's errors become UsageErrors.
func Parse(fs *pflag.FlagSet, args []string) error {
	fs.SetOutput(io.Discard)
	if err := fs.Parse(args); err != nil {
		if err == pflag.ErrHelp {
			return err
		}
		// pflag echoes the argument it could not parse, which may be a DSN given with one
		// dash (-dsn=postgres://u:secret@h): never print its password.
		return Usagef("%s: %s (see `pgceiling %s --help`)", fs.Name(), RedactText(err.Error()), fs.Name())
	}
	if fl := fs.Lookup("config"); fl != nil && fl.Value.String() != "" {
		return ApplyFile(fs, fl.Value.String())
	}
	return nil
}

// Suggest returns the candidate closest to s by edit distance, or "" when none is close.
func Suggest(s string, candidates []string) string {
	best, bestD := "", 1<<30
	for _, c := range candidates {
		if d := editDistance(strings.ToLower(s), c); d < bestD {
			best, bestD = c, d
		}
	}
	if bestD <= max(2, len(s)/3) {
		return best
	}
	return ""
}

func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// OneOf validates that v is one of allowed, suggesting the closest on a typo.
func OneOf[T ~string](what string, v T, allowed []T) error {
	names := make([]string, len(allowed))
	for i, a := range allowed {
		if v == a {
			return nil
		}
		names[i] = string(a)
	}
	msg := fmt.Sprintf("unknown %s %q (valid: %s)", what, v, strings.Join(names, ", "))
	if s := Suggest(string(v), names); s != "" {
		msg += fmt.Sprintf("; did you mean %q?", s)
	}
	return Usagef("%s", msg)
}

// bindConfigFlag adds --config FILE to fs.
func bindConfigFlag(fs *pflag.FlagSet, path *string) {
	fs.StringVar(path, "config", "", "read flags from `FILE`: one \"name = value\" line per flag, # comments (flags given on the command line win)")
}
