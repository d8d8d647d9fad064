package config

import (
	"math"
	"strings"
	"testing"
)

func TestParseRate(t *testing.T) {
	for in, want := range map[string]float64{"800": 800, "800/s": 800, "800 tx/s": 800, "800tx/s": 800, " 12.5/s ": 12.5, "1e3": 1000} {
		if got, err := ParseRate(in); err != nil || got != want {
			t.Errorf("ParseRate(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "0", "-5/s", "fast", "800/min", "NaN", "Inf", "800 %"} {
		if got, err := ParseRate(in); err == nil || !strings.Contains(err.Error(), "800/s") {
			t.Errorf("ParseRate(%q) = %v, %v; want an error that shows the form", in, got, err)
		}
	}
}

func TestParseGrowth(t *testing.T) {
	for in, want := range map[string]float64{"40%/year": 0.4, "40%": 0.4, "40 %/yr": 0.4, "0.4": 0.4, "0": 0, "0%/year": 0,
		"-10%/y": -0.1, "1%/month": math.Pow(1.01, 12) - 1, "200%": 2} {
		if got, err := ParseGrowth(in); err != nil || math.Abs(got-want) > 1e-12 {
			t.Errorf("ParseGrowth(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "fast", "40%/decade", "-100%", "-150%", "NaN", "1e9"} {
		if got, err := ParseGrowth(in); err == nil || !strings.Contains(err.Error(), "40%/year") {
			t.Errorf("ParseGrowth(%q) = %v, %v; want an error that shows the form", in, got, err)
		}
	}
}

func TestPlanValidate(t *testing.T) {
	c := Plan{PeakFactor: 0.5}
	err := c.Validate()
	if err == nil || !IsUsage(err) {
		t.Fatalf("Validate(empty) = %v, want a usage error", err)
	}
	for _, want := range []string{"--current is required", "--growth is required", "--peak-factor must be"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Validate(empty) = %q, want it to say %q", err, want)
		}
	}
	c = Plan{Current: Rate{V: 800, Given: true}, Growth: Growth{PerYear: 0.4, Given: true}, PeakFactor: 3}
	if err := c.Validate(); err != nil {
		t.Errorf("Validate(%+v) = %v", c, err)
	}
}
