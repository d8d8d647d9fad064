package config

import (
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

// TestScriptFlags: --script is repeatable, its weights are checked, and it goes with the
// workload "script" only.
func TestScriptFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string // "" = valid
	}{
		{[]string{"--workload", "script", "--script", "a.sql", "--script", "b.sql@3"}, ""},
		{[]string{"--workload", "script"}, "--workload script needs --script"},
		{[]string{"--script", "a.sql"}, `add it to --workload`},
		{[]string{"--workload", "script", "--script", "a.sql@x"}, "the weight after @ must be an integer"},
		{[]string{"--workload", "script", "--script", "a.sql@0"}, "the weights add up to 0"},
	} {
		var c Run
		fs := pflag.NewFlagSet("run", pflag.ContinueOnError)
		BindRun(fs, &c)
		args := append([]string{"--rate", "10"}, tc.args...)
		if err := Parse(fs, args); err != nil {
			t.Fatalf("parse %q: %v", args, err)
		}
		err := c.Validate([]string{"oltp", "transfer", "insert", ScriptWorkload})
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("run %q: Validate = %v, want %q", args, err, tc.want)
		}
		if tc.want == "" && len(c.Scripts) != 2 {
			t.Errorf("run %q: scripts %q, want both", args, c.Scripts)
		}
	}
}
