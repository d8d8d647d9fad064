package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
)

func TestInspectFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		file string // config file contents, "" for none
		want Inspect
	}{
		{nil, "", Inspect{}},
		{[]string{"--json"}, "", Inspect{JSON: true}},
		{[]string{"--config", "FILE"}, "json = true\n", Inspect{JSON: true}},
		{[]string{"--json=false", "--config", "FILE"}, "json = true\n", Inspect{}},
	} {
		args := append([]string(nil), tc.args...)
		if tc.file != "" {
			path := filepath.Join(t.TempDir(), "pgceiling.conf")
			if err := os.WriteFile(path, []byte(tc.file), 0o600); err != nil {
				t.Fatal(err)
			}
			for i := range args {
				if args[i] == "FILE" {
					args[i] = path
				}
			}
			tc.want.ConfigFile = path
		}
		var c Inspect
		fs := pflag.NewFlagSet("inspect", pflag.ContinueOnError)
		c.Bind(fs)
		if err := Parse(fs, args); err != nil || c != tc.want {
			t.Errorf("inspect %q (file %q): %+v, %v; want %+v", args, tc.file, c, err, tc.want)
		}
	}
}

func TestSafetyAndObserveFlags(t *testing.T) {
	for _, tc := range []struct {
		args     []string
		allow    bool
		interval time.Duration
		problem  string
	}{
		{nil, false, 100 * time.Millisecond, ""},
		{[]string{"--allow-unsafe-server", "--sample-interval", "250ms"}, true, 250 * time.Millisecond, ""},
		{[]string{"--sample-interval", "1ms"}, false, time.Millisecond, "--sample-interval 1ms: want between 10ms and 10s"},
		{[]string{"--sample-interval", "1m"}, false, time.Minute, "--sample-interval 1m0s"},
	} {
		var s Safety
		var o Observe
		fs := pflag.NewFlagSet("run", pflag.ContinueOnError)
		s.Bind(fs)
		o.Bind(fs)
		if err := Parse(fs, tc.args); err != nil {
			t.Errorf("run %q: %v", tc.args, err)
			continue
		}
		var p Problems
		o.Check(&p)
		got := ""
		if err := p.Err(); err != nil {
			got = err.Error()
			if !IsUsage(err) {
				t.Errorf("run %q: problem %v is not a usage error", tc.args, err)
			}
		}
		if s.AllowUnsafeServer != tc.allow || o.SampleInterval != tc.interval ||
			(tc.problem == "") != (got == "") || !strings.Contains(got, tc.problem) {
			t.Errorf("run %q: allow %v, interval %s, problem %q; want %v, %s, %q", tc.args,
				s.AllowUnsafeServer, o.SampleInterval, got, tc.allow, tc.interval, tc.problem)
		}
	}
}

func TestInspectUnknownFlag(t *testing.T) {
	var c Inspect
	fs := pflag.NewFlagSet("inspect", pflag.ContinueOnError)
	c.Bind(fs)
	if err := Parse(fs, []string{"--jsno"}); err == nil || !IsUsage(err) {
		t.Errorf("inspect --jsno: %v, want a usage error", err)
	}
}
