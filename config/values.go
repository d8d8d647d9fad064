package config

import (
	"strings"

	"github.com/spf13/pflag"
)

// choice binds a flag to a string type (an engine, an exec mode, a synchronous_commit
// setting). It accepts any value, so Validate can report every bad one at once with a
// suggestion; --help shows it as a string flag.
type choice[T ~string] struct{ v *T }

func (c choice[T]) String() string {
	if c.v == nil {
		return ""
	}
	return string(*c.v)
}

func (c choice[T]) Set(s string) error { *c.v = T(s); return nil }

func (choice[T]) Type() string { return "string" }

// bindChoice adds a flag of a string type with its default.
func bindChoice[T ~string](fs *pflag.FlagSet, v *T, name string, def T, usage string) {
	*v = def
	fs.Var(choice[T]{v}, name, usage)
}

// list binds a comma-separated flag to a slice of a string type. It parses with pflag's
// own string slice (the same CSV rules; the first use replaces the default, later ones
// append), so --help and the results file show it as a string slice.
type list[T ~string] struct {
	pflag.Value // pflag's string slice, writing into raw
	raw         *[]string
	v           *[]T
}

func (l list[T]) Set(s string) error {
	if err := l.Value.Set(s); err != nil {
		return err
	}
	*l.v = make([]T, len(*l.raw))
	for i, r := range *l.raw {
		(*l.v)[i] = T(r)
	}
	return nil
}

// bindList adds a comma-separated flag of a string type with its default.
func bindList[T ~string](fs *pflag.FlagSet, v *[]T, name string, def []T, usage string) {
	raw := make([]string, len(def))
	for i, d := range def {
		raw[i] = string(d)
	}
	scratch := pflag.NewFlagSet(name, pflag.ContinueOnError)
	scratch.StringSliceVar(&raw, name, raw, usage)
	*v = append([]T(nil), def...)
	fs.Var(list[T]{Value: scratch.Lookup(name).Value, raw: &raw, v: v}, name, usage)
}

// Values returns every flag's value in fs by name, for the results file: the DSN's
// password redacted, lists without their brackets.
func Values(fs *pflag.FlagSet) map[string]string {
	m := map[string]string{}
	fs.VisitAll(func(f *pflag.Flag) {
		v := f.Value.String()
		if f.Name == "dsn" {
			v = RedactDSN(v)
		}
		if f.Value.Type() == "stringSlice" {
			v = strings.Trim(v, "[]")
		}
		m[f.Name] = v
	})
	return m
}
