package result_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/pgceiling/pgceiling/result"
	"github.com/pgceiling/pgceiling/search"
)

// schemaPath is the published JSON Schema of results files.
const schemaPath = "../docs/results.schema.json"

// readSchema reads the published schema as plain JSON.
func readSchema(t *testing.T) map[string]any {
	t.Helper()
	b, err := os.ReadFile(schemaPath)
	if err != nil {
		t.Fatalf("read schema: %v", err)
	}
	var s map[string]any
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatalf("%s is not JSON: %v", schemaPath, err)
	}
	return s
}

// compileSchema compiles the published schema, formats (date-time) asserted.
func compileSchema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	f, err := os.Open(schemaPath)
	if err != nil {
		t.Fatalf("read schema: %v", err)
	}
	defer f.Close()
	doc, err := jsonschema.UnmarshalJSON(f)
	if err != nil {
		t.Fatalf("%s is not JSON: %v", schemaPath, err)
	}
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	if err := c.AddResource("results.schema.json", doc); err != nil {
		t.Fatal(err)
	}
	sch, err := c.Compile("results.schema.json")
	if err != nil {
		t.Fatalf("compile %s: %v", schemaPath, err)
	}
	return sch
}

// validate checks the bytes of a results file against the schema.
func validate(sch *jsonschema.Schema, b []byte) error {
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		return err
	}
	return sch.Validate(inst)
}

// TestSchemaValidatesFixtures: the report package's results files (written by
// result.Write from simulated searches and runs) and testdata/real-run.json (written by a
// real pgceiling run against a local server, 60 s at 300 tx/s) are valid.
func TestSchemaValidatesFixtures(t *testing.T) {
	sch := compileSchema(t)
	files, _ := filepath.Glob("../report/testdata/*.json")
	if len(files) < 3 {
		t.Fatalf("found %d results fixtures under report/testdata, want at least 3", len(files))
	}
	files = append(files, "testdata/real-run.json")
	for _, p := range files {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if err := validate(sch, b); err != nil {
			t.Errorf("%s does not validate against %s: %v", p, schemaPath, err)
		}
	}
}

// TestSchemaValidatesWritten: files written by result.Write from constructed values are
// valid: a fresh file, a run with one probe, and a file with every field set.
func TestSchemaValidatesWritten(t *testing.T) {
	sch := compileSchema(t)
	run := result.NewFile("run")
	p := result.Probe{Workload: "oltp", SyncCommit: result.SyncOn, TargetRate: 100, Scheduled: 10, Committed: 7,
		Rejected: 1, StartedAt: time.Now()}
	p.Failed[result.LockTimeout] = 2
	p.Series = []result.Second{{T: 0, Phase: result.PhaseWarmup, Offered: 100, Committed: 100}}
	run.Sweeps = []result.Sweep{{Workload: "oltp", SyncCommit: result.SyncOn, Probes: []result.Probe{p}}}
	// A probe that could not start (the server went away before it) carries only its
	// rate, error and verdict, as real files show.
	fault := result.NewFile("search")
	fault.Sweeps = []result.Sweep{{Workload: "transfer", SyncCommit: result.SyncOn, Probes: []result.Probe{
		{TargetRate: 343, Error: "before the probe: restore: server shutting down", Verdict: result.Fault, Retry: true}}}}
	for name, f := range map[string]*result.File{"new": result.NewFile("search"), "run": run, "fault": fault, "full": fullFile()} {
		path := filepath.Join(t.TempDir(), name+".json")
		if err := result.Write(path, f); err != nil {
			t.Fatal(err)
		}
		b, _ := os.ReadFile(path)
		if err := validate(sch, b); err != nil {
			t.Errorf("the %s file result.Write wrote does not validate: %v\n%s", name, err, b)
		}
	}
}

// TestSchemaComplete keeps the schema and the Go types in step: a file with every field
// set (so no omitempty field is left out) validates, every object in the schema refuses
// properties it does not list (so a new Go field without a schema entry fails here), and
// every property the schema lists is written (so a removed or renamed field fails too).
func TestSchemaComplete(t *testing.T) {
	b, err := json.Marshal(fullFile())
	if err != nil {
		t.Fatal(err)
	}
	if err := validate(compileSchema(t), b); err != nil {
		t.Fatalf("a results file with every field set does not validate: %v", err)
	}
	s := readSchema(t)
	objects := map[string]map[string]any{"(top)": s}
	for name, d := range s["$defs"].(map[string]any) {
		if d.(map[string]any)["type"] == "object" {
			objects[name] = d.(map[string]any)
		}
	}
	var doc any
	json.Unmarshal(b, &doc)
	written := map[string]bool{}
	keys(doc, written)
	for name, o := range objects {
		if o["additionalProperties"] != false {
			t.Errorf("schema object %s allows additional properties: a new field would pass unnoticed", name)
		}
		for prop := range o["properties"].(map[string]any) {
			if !written[prop] {
				t.Errorf("schema object %s lists %q, which a file with every field set does not have", name, prop)
			}
		}
	}
}

// keys collects every object key of a JSON document.
func keys(v any, into map[string]bool) {
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			into[k] = true
			keys(e, into)
		}
	case []any:
		for _, e := range v {
			keys(e, into)
		}
	}
}

// TestSchemaEnums: the schema's closed lists are the code's.
func TestSchemaEnums(t *testing.T) {
	s := readSchema(t)
	defs := s["$defs"].(map[string]any)
	def := func(path ...string) any {
		var v any = defs
		for _, p := range path {
			v = v.(map[string]any)[p]
		}
		return v
	}
	strs := func(v any) []string {
		var out []string
		switch v := v.(type) {
		case []any:
			for _, e := range v {
				out = append(out, e.(string))
			}
		case map[string]any:
			for k := range v {
				out = append(out, k)
			}
		}
		sort.Strings(out)
		return out
	}
	sorted := func(v ...string) []string { sort.Strings(v); return v }
	var classes, engines, syncs, verdicts []string
	for c := result.Class(0); c < result.NumClasses; c++ {
		classes = append(classes, c.String())
	}
	for _, e := range result.Engines {
		engines = append(engines, string(e))
	}
	for _, e := range result.SyncCommits {
		syncs = append(syncs, string(e))
	}
	for _, e := range result.Verdicts {
		verdicts = append(verdicts, string(e))
	}
	for _, tc := range []struct {
		name      string
		got, want []string
	}{
		{"Counts properties", strs(def("Counts", "properties")), sorted(classes...)},
		{"Engine", strs(def("Engine", "enum")), sorted(engines...)},
		{"SyncCommit", strs(def("SyncCommit", "enum")), sorted(syncs...)},
		{"Probe.sync_commit", strs(def("Probe", "properties", "sync_commit", "enum")), sorted(append(syncs, "")...)},
		{"Verdict", strs(def("Verdict", "enum")), sorted(verdicts...)},
		{"Second.phase", strs(def("Second", "properties", "phase", "enum")),
			sorted(result.PhaseWarmup, result.PhaseMeasure, result.PhaseDrain)},
		{"Probe.cut_by", strs(def("Probe", "properties", "cut_by", "enum")),
			sorted(result.CutByErrors, result.CutByTrend, result.CutByServer)},
		{"Steady.series", strs(def("Steady", "properties", "series", "enum")),
			sorted(search.SeriesQueueWait, search.SeriesLatency)},
		{"Steady.verdict", strs(def("Steady", "properties", "verdict", "enum")),
			sorted(search.SteadyOK, search.SteadyGrowing, search.SteadyTooShort)},
	} {
		if !slices.Equal(tc.got, tc.want) {
			t.Errorf("schema %s = %v, the code has %v", tc.name, tc.got, tc.want)
		}
	}
}

// TestSchemaRejects: the schema is not vacuous: files with a wrong type, an unknown
// field, a bad enum value or another format are invalid.
func TestSchemaRejects(t *testing.T) {
	sch := compileSchema(t)
	good, err := json.Marshal(fullFile())
	if err != nil {
		t.Fatal(err)
	}
	for name, edit := range map[string]func(m map[string]any){
		"target_rate string": func(m map[string]any) { probe(m)["target_rate"] = "100" },
		"unknown field":      func(m map[string]any) { probe(m)["target_rates"] = 100.0 },
		"bad verdict":        func(m map[string]any) { probe(m)["verdict"] = "passed" },
		"bad class":          func(m map[string]any) { probe(m)["failed"] = map[string]any{"timeout": 1.0} },
		"negative count":     func(m map[string]any) { probe(m)["committed"] = -1.0 },
		"fraction above 1":   func(m map[string]any) { probe(m)["observation"].(map[string]any)["server_cpu_share"] = 1.5 },
		"bad time":           func(m map[string]any) { m["started_at"] = "yesterday" },
		"format 2":           func(m map[string]any) { m["format_version"] = 2.0 },
		"no sweeps":          func(m map[string]any) { delete(m, "sweeps") },
	} {
		var m map[string]any
		json.Unmarshal(good, &m)
		edit(m)
		b, _ := json.Marshal(m)
		if err := validate(sch, b); err == nil {
			t.Errorf("a results file with %s validates", name)
		}
	}
}

// probe is the first probe of a results document.
func probe(m map[string]any) map[string]any {
	return m["sweeps"].([]any)[0].(map[string]any)["probes"].([]any)[0].(map[string]any)
}

// fullFile is a results file with every field set to a non-zero value the schema allows:
// filled by reflection, so a field added to the Go types is filled too.
func fullFile() *result.File {
	var f result.File
	fill(reflect.ValueOf(&f).Elem(), "File")
	return &f
}

// enumValues are the values of string fields with a closed list, by type or Type.Field.
var enumValues = map[string]string{
	"SyncCommit": "on", "Engine": "loop", "Verdict": "pass",
	"File.Tool": "pgceiling", "File.Command": "search", "File.RunID": "20261130T090000Z-0a1b2c",
	"Second.Phase": result.PhaseMeasure, "Probe.CutBy": result.CutByTrend,
	"Steady.Series": search.SeriesQueueWait, "Steady.Verdict": search.SteadyGrowing,
}

func fill(v reflect.Value, where string) {
	t := v.Type()
	switch t {
	case reflect.TypeFor[time.Time]():
		v.Set(reflect.ValueOf(time.Date(2026, 11, 30, 9, 0, 0, 5, time.UTC)))
		return
	case reflect.TypeFor[result.Counts]():
		for i := 0; i < v.Len(); i++ {
			v.Index(i).SetInt(int64(i + 1))
		}
		return
	}
	switch t.Kind() {
	case reflect.Struct:
		for i := 0; i < t.NumField(); i++ {
			fill(v.Field(i), t.Name()+"."+t.Field(i).Name)
		}
	case reflect.Pointer:
		v.Set(reflect.New(t.Elem()))
		fill(v.Elem(), where)
	case reflect.Slice:
		v.Set(reflect.MakeSlice(t, 1, 1))
		fill(v.Index(0), where)
	case reflect.Map:
		v.Set(reflect.MakeMap(t))
		v.SetMapIndex(reflect.ValueOf("key"), reflect.ValueOf("value"))
	case reflect.String:
		s, ok := enumValues[t.Name()]
		if !ok {
			s, ok = enumValues[where]
		}
		if !ok {
			s = "text"
		}
		v.SetString(s)
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int64:
		v.SetInt(1)
	case reflect.Float64:
		v.SetFloat(0.5)
	default:
		panic("fill: no rule for " + where + " of kind " + t.Kind().String())
	}
}

// TestFullFileIsFull: the reflection filler leaves no field at its zero value (else the
// completeness test would miss omitempty fields).
func TestFullFileIsFull(t *testing.T) {
	var zero func(v reflect.Value, where string)
	zero = func(v reflect.Value, where string) {
		if v.IsZero() {
			t.Errorf("fullFile leaves %s zero", where)
			return
		}
		switch v.Kind() {
		case reflect.Struct:
			if v.Type() == reflect.TypeFor[time.Time]() {
				return
			}
			for i := 0; i < v.NumField(); i++ {
				zero(v.Field(i), where+"."+v.Type().Field(i).Name)
			}
		case reflect.Pointer:
			zero(v.Elem(), where)
		case reflect.Slice:
			zero(v.Index(0), where+"[0]")
		}
	}
	zero(reflect.ValueOf(fullFile()).Elem(), "File")
	if got := strings.Count(mustJSON(t, fullFile()), `"text"`); got == 0 {
		t.Error("fullFile has no free text fields: the filler did not run")
	}
}

func mustJSON(t *testing.T, v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// docSection is the text of docs/results.md under "### heading", up to the next heading.
func docSection(t *testing.T, heading string) string {
	t.Helper()
	b, err := os.ReadFile("../docs/results.md")
	if err != nil {
		t.Fatalf("read docs/results.md: %v", err)
	}
	_, rest, ok := strings.Cut(string(b), "\n### "+heading+"\n")
	if !ok {
		t.Fatalf("docs/results.md has no section ### %s", heading)
	}
	if i := strings.Index(rest, "\n#"); i >= 0 {
		rest = rest[:i]
	}
	return rest
}

// TestSchemaDocumented: docs/results.md has a table row for every field of every object
// of the schema, under the object's heading.
func TestSchemaDocumented(t *testing.T) {
	s := readSchema(t)
	objects := map[string]map[string]any{"File": s}
	for name, d := range s["$defs"].(map[string]any) {
		if d.(map[string]any)["type"] == "object" {
			objects[name] = d.(map[string]any)
		}
	}
	for name, o := range objects {
		sec := docSection(t, name)
		for prop := range o["properties"].(map[string]any) {
			if !strings.Contains(sec, "\n| `"+prop+"` |") {
				t.Errorf("docs/results.md section %s has no row for field %s", name, prop)
			}
		}
	}
}
