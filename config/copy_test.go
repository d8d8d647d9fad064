package config

import (
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/pgceiling/pgceiling/result"
)

// The copy flags: their defaults, their bounds, and the loop engine refused for copy in
// run and search alike, each as one usage line.
func TestCopyFlags(t *testing.T) {
	workloads := []string{"oltp", "transfer", "insert", "copy"}
	run := func(args ...string) (*Run, error) {
		var c Run
		fs := pflag.NewFlagSet("run", pflag.ContinueOnError)
		BindRun(fs, &c)
		if err := Parse(fs, args); err != nil {
			return nil, err
		}
		return &c, c.Validate(workloads)
	}
	c, err := run("--rate", "5000", "--workload", "copy")
	if err != nil || c.Copy.Batch != result.DefaultCopyBatch || c.Copy.Wait != result.DefaultCopyWait {
		t.Fatalf("run --workload copy: %+v, %v; want the default batches", c, err)
	}
	if c, err := run("--rate", "5000", "--workload", "copy", "--copy-wait", "0", "--copy-batch", "1"); err != nil || c.Copy.Wait != 0 || c.Copy.Batch != 1 {
		t.Errorf("--copy-wait 0 --copy-batch 1: %+v, %v; want both allowed", c.Copy, err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--copy-batch", "0"}, "--copy-batch must be between 1 and 100000, got 0"},
		{[]string{"--copy-batch", "100001"}, "--copy-batch must be between 1 and 100000"},
		{[]string{"--copy-wait", "1s"}, "--copy-wait must be below --pool-wait 1s"},
		{[]string{"--copy-wait", "-1ms"}, "--copy-wait must be >= 0"},
		{[]string{"--engine", "loop"}, "--engine loop cannot run the copy workload"},
	} {
		_, err := run(append([]string{"--rate", "5000", "--workload", "copy"}, tc.args...)...)
		if err == nil || !IsUsage(err) || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("run --workload copy %v: %v; want one usage line with %q", tc.args, err, tc.want)
		}
	}
	if _, err := run("--rate", "500", "--workload", "insert", "--engine", "loop", "--pool-wait", "1ms"); err != nil {
		t.Errorf("run --workload insert --engine loop --pool-wait 1ms: %v; the copy rules bind copy only", err)
	}

	var s Search
	fs := pflag.NewFlagSet("search", pflag.ContinueOnError)
	BindSearch(fs, &s)
	if err := Parse(fs, []string{"--workload", "insert,copy", "--engine", "loop"}); err != nil {
		t.Fatal(err)
	}
	if err := s.ApplyProfile(fs, false, time.Now()); err != nil {
		t.Fatal(err)
	}
	if err := s.Validate(workloads); err == nil || !strings.Contains(err.Error(), "--engine loop cannot run the copy workload") {
		t.Errorf("search --workload insert,copy --engine loop: %v; want the loop refused", err)
	}
}
