package result

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestWriteReadRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "r.json")
	f := NewFile("run")
	p := Probe{Workload: "oltp", SyncCommit: "on", TargetRate: 100, Scheduled: 10, Committed: 7, Rejected: 1}
	p.Failed[LockTimeout] = 2
	f.Sweeps = []Sweep{{Workload: "oltp", SyncCommit: "on", Probes: []Probe{p}}}
	if err := Write(path, f); err != nil {
		t.Fatalf("Write: %v", err)
	}
	g, err := Read(path)
	if err != nil {
		t.Fatalf("Read: %v", err)
	}
	q := g.Sweeps[0].Probes[0]
	if q.Failed[LockTimeout] != 2 || !q.Balanced() || q.ErrorRate() != 0.3 {
		t.Errorf("round trip: failed=%v balanced=%v rate=%v", q.Failed, q.Balanced(), q.ErrorRate())
	}
	left, _ := filepath.Glob(filepath.Join(filepath.Dir(path), ".r.json.tmp-*"))
	if len(left) != 0 {
		t.Errorf("temp files left: %v", left)
	}
}

func TestReadRejects(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.json")
	if err := Write(good, NewFile("search")); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(good)
	cases := map[string]string{
		"empty":     "",
		"not json":  "hello world",
		"truncated": string(b[:len(b)/2]),
		"other":     `{"tool":"vegeta"}`,
		"version0":  strings.Replace(string(b), `"format_version": 1`, `"format_version": 0`, 1),
		"noversion": strings.Replace(string(b), `"format_version": 1`, `"format_version": "1"`, 1),
		"array":     `[{"tool":"pgceiling","format_version":1}]`,
		"badclass":  `{"tool":"pgceiling","format_version":1,"sweeps":[{"probes":[{"failed":{"nope":1}}]}]}`,
	}
	for name, content := range cases {
		p := filepath.Join(dir, name)
		os.WriteFile(p, []byte(content), 0o644)
		if _, err := Read(p); !errors.Is(err, ErrNotResults) {
			t.Errorf("Read(%s) = %v, want ErrNotResults", name, err)
		}
	}
}

func TestCheckWritable(t *testing.T) {
	if err := CheckWritable(filepath.Join(t.TempDir(), "x.json")); err != nil {
		t.Errorf("CheckWritable(tempdir) = %v", err)
	}
	if err := CheckWritable("/nonexistent-dir-xyz/x.json"); err == nil {
		t.Error("CheckWritable(missing dir) = nil")
	}
}

func FuzzDecode(f *testing.F) {
	good := NewFile("search")
	p := Probe{Workload: "oltp", SyncCommit: "on", TargetRate: 200, Scheduled: 100, Committed: 98, Rejected: 1}
	p.Failed[Deadlock] = 1
	good.Sweeps = []Sweep{{Workload: "oltp", SyncCommit: "on", Probes: []Probe{p}, Knee: 200}}
	b, err := json.Marshal(good)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b)
	f.Add([]byte(`{"tool":"pgceiling","format_version":1,"sweeps":[{"probes":[{"failed":{"deadlock":3}}]}]}`))
	f.Add([]byte(`{"tool":"pgceiling","format_version":1,"sweeps":null}`))
	f.Add([]byte(`[1,2`))
	f.Add([]byte(`{"tool":"pgceiling","format_version":1,"sweeps":[{"probes":[{"target_rate":"fast"}]}]}`))
	f.Add([]byte(`{"tool":"pgceiling","format_version":2,"sweeps":7}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		file, err := Decode(b, "fuzz.json")
		if err != nil {
			if !errors.Is(err, ErrNotResults) && !errors.Is(err, ErrNewerFormat) {
				t.Errorf("Decode error %v wraps neither ErrNotResults nor ErrNewerFormat", err)
			}
			if msg := err.Error(); strings.Contains(msg, "Go ") || strings.Contains(msg, "result.") {
				t.Errorf("Decode error shows Go's names: %s", msg)
			}
			return
		}
		if file.Tool != "pgceiling" || file.FormatVersion != FormatVersion {
			t.Errorf("Decode accepted a file with tool %q, format %d", file.Tool, file.FormatVersion)
		}
	})
}
