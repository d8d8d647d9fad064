package config

import (
	"errors"
	"fmt"
	"strings"
)

// UsageError is a problem with what the user typed: an unknown flag, a bad value, a
// missing argument. The CLI prints it on one line and exits 2.
type UsageError struct{ Msg string }

func (e *UsageError) Error() string { return e.Msg }

// Usagef makes a UsageError.
func Usagef(format string, args ...any) error {
	return &UsageError{Msg: fmt.Sprintf(format, args...)}
}

// IsUsage reports whether err is (or wraps) a UsageError.
func IsUsage(err error) bool {
	var u *UsageError
	return errors.As(err, &u)
}

// Problems collects validation problems so Validate can report all of them at once.
type Problems []string

// Addf records one problem.
func (p *Problems) Addf(format string, args ...any) { *p = append(*p, fmt.Sprintf(format, args...)) }

// Err returns nil when there are no problems, else one UsageError listing them all on one
// line separated by "; ".
func (p Problems) Err() error {
	if len(p) == 0 {
		return nil
	}
	return &UsageError{Msg: strings.Join(p, "; ")}
}

// ThresholdError says the command worked but its result broke a threshold the user set
// (run --fail-on-error-rate or --p99-slo, compare --fail-if-knee-drops or
// --fail-if-p99-rises), like k6's thresholds: the results are written, and the CLI exits 3.
type ThresholdError struct{ Msg string }

func (e *ThresholdError) Error() string { return e.Msg }

// Thresholdf makes a ThresholdError.
func Thresholdf(format string, args ...any) error {
	return &ThresholdError{Msg: fmt.Sprintf(format, args...)}
}

// IsThreshold reports whether err is (or wraps) a ThresholdError.
func IsThreshold(err error) bool {
	var t *ThresholdError
	return errors.As(err, &t)
}
