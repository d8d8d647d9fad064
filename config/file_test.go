package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
)

type sample struct {
	Rate     float64
	Duration time.Duration
	Name     string
	Config   string
}

func newSample() (*pflag.FlagSet, *sample) {
	s := &sample{}
	fs := pflag.NewFlagSet("run", pflag.ContinueOnError)
	fs.Float64Var(&s.Rate, "rate", 0, "rate")
	fs.DurationVar(&s.Duration, "duration", time.Minute, "duration")
	fs.StringVar(&s.Name, "name", "x", "name")
	fs.StringVar(&s.Config, "config", "", "config file")
	return fs, s
}

func writeFile(t *testing.T, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "c.conf")
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestConfigFileFlagsOverride(t *testing.T) {
	p := writeFile(t, "# comment\nrate = 50\nduration = 2s\nname = \"file\"\n")
	fs, s := newSample()
	if err := Parse(fs, []string{"--config", p, "--rate", "70"}); err != nil {
		t.Fatalf("Parse: %v", err)
	}
	if s.Rate != 70 || s.Duration != 2*time.Second || s.Name != "file" {
		t.Errorf("got %+v; want rate 70 (flag wins), duration 2s and name file (from file)", s)
	}
}

func TestConfigFileErrors(t *testing.T) {
	cases := map[string]string{
		"unknown key": "rat = 5\n",
		"bad value":   "duration = soon\n",
		"no equals":   "rate 5\n",
	}
	for name, content := range cases {
		fs, _ := newSample()
		err := Parse(fs, []string{"--config", writeFile(t, content)})
		if err == nil || !IsUsage(err) {
			t.Errorf("%s: Parse = %v, want a usage error", name, err)
			continue
		}
		if strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: error spans lines: %q", name, err)
		}
	}
	fs, _ := newSample()
	if err := Parse(fs, []string{"--config", "/no/such/file"}); !IsUsage(err) {
		t.Errorf("missing config file: %v, want usage error", err)
	}
	fs, _ = newSample()
	if err := Parse(fs, []string{"--nope"}); !IsUsage(err) || !strings.Contains(err.Error(), "--help") {
		t.Errorf("unknown flag: %v, want a usage error pointing at --help", err)
	}
}

func TestSuggest(t *testing.T) {
	names := []string{"oltp", "transfer", "insert"}
	for in, want := range map[string]string{"otlp": "oltp", "tranfser": "transfer", "INSERT": "insert", "zzzzzzzz": ""} {
		if got := Suggest(in, names); got != want {
			t.Errorf("Suggest(%q) = %q, want %q", in, got, want)
		}
	}
	if err := OneOf("workload", "otlp", names); err == nil || !strings.Contains(err.Error(), `did you mean "oltp"`) {
		t.Errorf("OneOf(otlp) = %v", err)
	}
}

func FuzzParse(f *testing.F) {
	f.Add("--rate=5 --duration 3s", "rate = 1\nname = a\n")
	f.Add("--duration=-1h", "duration=1x")
	f.Add("--name", "\x00=\n=\n#")
	f.Fuzz(func(t *testing.T, args, file string) {
		p := filepath.Join(t.TempDir(), "c.conf")
		if err := os.WriteFile(p, []byte(file), 0o644); err != nil {
			t.Fatal(err)
		}
		fs, _ := newSample()
		// Must never panic; any error must be a usage error.
		err := Parse(fs, append(strings.Fields(args), "--config", p))
		if err != nil && err != pflag.ErrHelp && !IsUsage(err) {
			t.Errorf("Parse(%q, file %q) = %v, not a usage error", args, file, err)
		}
	})
}
