// Package thousands formats figures for people: fixed decimals and a comma between
// groups of three digits ("12,345.6"), the one way observe's bottleneck line, search's
// verdict reasons and report's tables write a number.
package thousands

import (
	"math"
	"strconv"
	"strings"
)

// Format writes v with dec decimals and thousands separators: "12,345.6". NaN and
// infinities are "-"; a negative value that rounds to zero prints without its sign.
func Format(v float64, dec int) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return "-"
	}
	s := strconv.FormatFloat(math.Abs(v), 'f', dec, 64)
	intPart, frac, _ := strings.Cut(s, ".")
	var b strings.Builder
	if v < 0 && strings.Trim(s, "0.") != "" {
		b.WriteByte('-')
	}
	for i, c := range intPart {
		if i > 0 && (len(intPart)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if frac != "" {
		b.WriteByte('.')
		b.WriteString(frac)
	}
	return b.String()
}
