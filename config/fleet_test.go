package config

import (
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

// TestFleetValidate: --drivers N needs a DSN the followers can reach, unless the leader
// starts them itself (--spawn, which then can use the embedded server); --spawn needs
// followers to start.
func TestFleetValidate(t *testing.T) {
	for _, tc := range []struct {
		args    []string
		haveDSN bool
		want    string // "" = valid
	}{
		{nil, false, ""},
		{[]string{"--drivers", "3"}, true, ""},
		{[]string{"--drivers", "3"}, false, "--drivers 3 needs --dsn"},
		{[]string{"--drivers", "3", "--spawn"}, false, ""},
		{[]string{"--drivers", "2", "--spawn"}, true, ""},
		{[]string{"--spawn"}, true, "--spawn starts the followers of --drivers N"},
		{[]string{"--drivers", "0"}, true, "--drivers must be >= 1"},
	} {
		var f Fleet
		fs := pflag.NewFlagSet("run", pflag.ContinueOnError)
		BindFleet(fs, &f, true)
		if err := Parse(fs, tc.args); err != nil {
			t.Fatalf("parse %q: %v", tc.args, err)
		}
		err := f.Validate(tc.haveDSN)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%q (DSN %v): %v, want valid", tc.args, tc.haveDSN, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%q (DSN %v): %v, want %q", tc.args, tc.haveDSN, err, tc.want)
		}
	}
	fs := pflag.NewFlagSet("follow", pflag.ContinueOnError)
	BindFleet(fs, &Fleet{}, false)
	if fs.Lookup("spawn") != nil || fs.Lookup("drivers") != nil {
		t.Error("follow has --spawn or --drivers: only a leader starts followers")
	}
}
