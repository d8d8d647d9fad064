package config

import (
	"math"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

func TestInitDefaults(t *testing.T) {
	var c Init
	fs := pflag.NewFlagSet("init", pflag.ContinueOnError)
	c.Bind(fs)
	if err := Parse(fs, nil); err != nil {
		t.Fatal(err)
	}
	if c.Wallets != 10_000 || c.Rows != 50_000_000 || c.Months != 12 || c.Zipf != 1.0 || c.Workers < 1 || c.Force || c.Distribute != "none" {
		t.Errorf("defaults = %+v", c)
	}
	if err := c.Validate(); err != nil {
		t.Errorf("defaults do not validate: %v", err)
	}
}

func TestInitValidate(t *testing.T) {
	ok := Init{Wallets: 10, Rows: 100, Months: 1, Zipf: 0, Workers: 1}
	cases := []struct {
		change func(*Init)
		want   []string // every fragment must appear
	}{
		{func(c *Init) {}, nil},
		{func(c *Init) { c.Rows = 0 }, []string{"--rows 0"}},
		{func(c *Init) { c.Rows = -5 }, []string{"--rows -5"}},
		{func(c *Init) { c.Wallets = 1 }, []string{"--wallets 1"}},
		{func(c *Init) { c.Months = 0 }, []string{"--months 0"}},
		{func(c *Init) { c.Workers = 0 }, []string{"--workers 0"}},
		{func(c *Init) { c.Zipf = -0.5 }, []string{"--zipf -0.5"}},
		{func(c *Init) { c.Zipf = math.NaN() }, []string{"--zipf NaN"}},
		{func(c *Init) { c.Distribute = "none" }, nil},
		{func(c *Init) { c.Distribute = "citus" }, nil},
		{func(c *Init) { c.Distribute = "cockroach" }, []string{`--distribute "cockroach": want none or citus`}},
		// all problems at once
		{func(c *Init) { c.Rows, c.Wallets, c.Months, c.Workers, c.Zipf = -1, 0, 0, 0, -1 },
			[]string{"--rows -1", "--wallets 0", "--months 0", "--workers 0", "--zipf -1"}},
	}
	for _, tc := range cases {
		c := ok
		tc.change(&c)
		err := c.Validate()
		if len(tc.want) == 0 {
			if err != nil {
				t.Errorf("(%+v).Validate() = %v, want nil", c, err)
			}
			continue
		}
		if err == nil || !IsUsage(err) {
			t.Errorf("(%+v).Validate() = %v, want a usage error", c, err)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("(%+v).Validate() = %q, missing %q", c, err, w)
			}
		}
		if strings.Contains(err.Error(), "\n") {
			t.Errorf("(%+v).Validate() = %q spans lines", c, err)
		}
	}
}
