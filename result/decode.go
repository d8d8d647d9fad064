package result

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"time"
)

// typeError is a value of a results file that does not have the type its field takes,
// named by its path in the file.
type typeError struct {
	path string // e.g. sweeps[0].probes[2].target_rate
	want string // e.g. "a number"
	got  string // e.g. "a string"
}

func (e *typeError) Error() string {
	path := e.path
	if path == "" {
		path = "the top level"
	}
	return fmt.Sprintf("%s: want %s, got %s", path, e.want, e.got)
}

var (
	timeType   = reflect.TypeFor[time.Time]()
	countsType = reflect.TypeFor[Counts]()
)

// checkTypes walks a JSON document decoded with UseNumber against the Go type t that
// encoding/json decodes it into, by the same rules (fields by json name, matched without
// regard to case; unknown fields and nulls ignored), and returns the first value json
// would refuse, with its path. It exists for the messages: json's own name Go types and
// struct paths without indices.
func checkTypes(v any, t reflect.Type, path string) *typeError {
	if v == nil {
		return nil // null leaves a Go value as it is
	}
	bad := func(want string) *typeError { return &typeError{path: path, want: want, got: jsonKind(v)} }
	switch t {
	case timeType:
		s, ok := v.(string)
		if !ok {
			return bad("a time (RFC 3339, e.g. 2026-11-30T09:00:00Z)")
		}
		if _, err := time.Parse(time.RFC3339, s); err != nil {
			return &typeError{path: path, want: "a time (RFC 3339, e.g. 2026-11-30T09:00:00Z)", got: strconv.Quote(s)}
		}
		return nil
	case countsType:
		m, ok := v.(map[string]any)
		if !ok {
			return bad("an object of counters by error class")
		}
		for k, c := range m {
			if _, ok := ClassByName(k); !ok {
				return &typeError{path: join(path, k), want: "an error class (" + strings.Join(classNames[:], ", ") + ")",
					got: strconv.Quote(k)}
			}
			if te := checkTypes(c, reflect.TypeFor[int64](), join(path, k)); te != nil {
				return te
			}
		}
		return nil
	}
	switch t.Kind() {
	case reflect.Pointer:
		return checkTypes(v, t.Elem(), path)
	case reflect.Struct:
		m, ok := v.(map[string]any)
		if !ok {
			return bad("an object")
		}
		for k, fv := range m {
			if f, ok := fieldByJSONName(t, k); ok {
				if te := checkTypes(fv, f.Type, join(path, k)); te != nil {
					return te
				}
			}
		}
		return nil
	case reflect.Slice:
		a, ok := v.([]any)
		if !ok {
			return bad("an array")
		}
		for i, e := range a {
			if te := checkTypes(e, t.Elem(), fmt.Sprintf("%s[%d]", path, i)); te != nil {
				return te
			}
		}
		return nil
	case reflect.Map:
		m, ok := v.(map[string]any)
		if !ok {
			return bad("an object")
		}
		for k, e := range m {
			if te := checkTypes(e, t.Elem(), join(path, k)); te != nil {
				return te
			}
		}
		return nil
	case reflect.String:
		if _, ok := v.(string); !ok {
			return bad("a string")
		}
		return nil
	case reflect.Bool:
		if _, ok := v.(bool); !ok {
			return bad("true or false")
		}
		return nil
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		n, ok := v.(json.Number)
		if !ok {
			return bad("an integer")
		}
		if _, err := strconv.ParseInt(string(n), 10, t.Bits()); err != nil {
			return &typeError{path: path, want: "an integer", got: string(n)}
		}
		return nil
	case reflect.Float32, reflect.Float64:
		n, ok := v.(json.Number)
		if !ok {
			return bad("a number")
		}
		if _, err := strconv.ParseFloat(string(n), t.Bits()); err != nil {
			return &typeError{path: path, want: "a number in range", got: string(n)}
		}
		return nil
	}
	return nil // interfaces take anything; the results file has no other kinds
}

// fieldByJSONName finds t's field named key in JSON, as encoding/json does: the exact
// name first, else one that differs only in case.
func fieldByJSONName(t reflect.Type, key string) (reflect.StructField, bool) {
	var folded reflect.StructField
	found := false
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" {
			continue
		}
		if name == "" {
			name = f.Name
		}
		if name == key {
			return f, true
		}
		if !found && strings.EqualFold(name, key) {
			folded, found = f, true
		}
	}
	return folded, found
}

// join appends a key to a path: "sweeps[0]" + "knee" = "sweeps[0].knee".
func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// jsonKind names what a decoded JSON value is, for messages.
func jsonKind(v any) string {
	switch v := v.(type) {
	case nil:
		return "null"
	case string:
		return "a string"
	case bool:
		return strconv.FormatBool(v)
	case json.Number:
		return "the number " + string(v)
	case []any:
		return "an array"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("%T", v)
}

// plainJSONError says what encoding/json refused without Go's type names.
func plainJSONError(err error) string {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return fmt.Sprintf("%s: a %s of the wrong type", te.Field, te.Value)
	}
	return "a value of the wrong type"
}
