package thousands

import (
	"math"
	"testing"
)

func TestFormat(t *testing.T) {
	for _, tc := range []struct {
		v    float64
		dec  int
		want string
	}{
		{0, 0, "0"}, {999, 0, "999"}, {1000, 0, "1,000"}, {3318, 0, "3,318"}, {1234567.891, 2, "1,234,567.89"},
		{12.5, 1, "12.5"}, {-4321.5, 1, "-4,321.5"}, {-0.01, 1, "0.0"}, {100000, 0, "100,000"},
		{math.NaN(), 0, "-"}, {math.Inf(1), 1, "-"},
	} {
		if got := Format(tc.v, tc.dec); got != tc.want {
			t.Errorf("Format(%v, %d) = %q, want %q", tc.v, tc.dec, got, tc.want)
		}
	}
}
