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
