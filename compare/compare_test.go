package compare

import (
	"bytes"
	"strings"
	"testing"

	"github.com/pgceiling/pgceiling/result"
	"github.com/pgceiling/pgceiling/search"
)

func fixture(t *testing.T, name string) *result.File {
	t.Helper()
	f, err := result.Read("../report/testdata/" + name)
	if err != nil {
		t.Fatalf("fixture %s: %v", name, err)
	}
	return f
}

// scaleKnee moves sweep i's knee (and the probe at it, the bracket and the interval) by
// factor, and its p99 at the knee by p99Factor.
func scaleKnee(t *testing.T, f *result.File, i int, factor, p99Factor float64) {
	t.Helper()
	sw := &f.Sweeps[i]
	k := sw.KneeProbe()
	if k == nil {
		t.Fatalf("sweep %d has no probe at its knee", i)
	}
	k.TargetRate *= factor
	k.Latency.P99 *= p99Factor
	sw.Knee *= factor
	sw.Bracket.Lo *= factor
	sw.Bracket.Hi *= factor
	if sw.Interval != nil {
		iv := *sw.Interval
		iv.Lo, iv.Hi = iv.Lo*factor, iv.Hi*factor
		sw.Interval = &iv
	}
}

func TestCompareSameFile(t *testing.T) {
	a, b := fixture(t, "search.json"), fixture(t, "search.json")
	c, err := Compare(a, b, "a.json", "b.json", Options{KneeDrop: 0, P99Rise: 0})
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Rows) != len(a.Sweeps) || len(c.Broken) != 0 || len(c.Differences) != 0 {
		t.Fatalf("Compare(search, itself): %d rows, broken %q, differences %+v; want one row per sweep, nothing broken or different",
			len(c.Rows), c.Broken, c.Differences)
	}
	for _, r := range c.Rows {
		if r.RateChange != 0 || r.P99Change != 0 || !r.Overlap {
			t.Errorf("%s sync=%s: change %v, p99 change %v, overlap %v; want 0, 0, overlapping", r.Workload, r.SyncCommit, r.RateChange, r.P99Change, r.Overlap)
		}
	}
}

func TestCompareGates(t *testing.T) {
	for _, tc := range []struct {
		name              string
		factor, p99Factor float64
		opt               Options
		want              []string // fragments of the one broken line; nil: none broken
	}{
		{"knee -20% past a 10% gate", 0.8, 1, Options{KneeDrop: 0.10, P99Rise: -1}, []string{"oltp sync=on: knee dropped 20 %", "975 -> 780", "--fail-if-knee-drops 10 %"}},
		{"knee -20% within a 25% gate", 0.8, 1, Options{KneeDrop: 0.25, P99Rise: -1}, nil},
		{"knee -20% without gates", 0.8, 1, NoGates, nil},
		{"knee +20% never a drop", 1.2, 1, Options{KneeDrop: 0, P99Rise: -1}, nil},
		{"p99 +30% past a 20% gate", 1, 1.3, Options{KneeDrop: -1, P99Rise: 0.2}, []string{"oltp sync=on: p99 at the knee rose 30 %", "--fail-if-p99-rises 20 %"}},
		{"p99 +10% within a 20% gate", 1, 1.1, Options{KneeDrop: -1, P99Rise: 0.2}, nil},
	} {
		a, b := fixture(t, "search.json"), fixture(t, "search.json")
		scaleKnee(t, b, 0, tc.factor, tc.p99Factor)
		c, err := Compare(a, b, "a", "b", tc.opt)
		if err != nil {
			t.Fatal(err)
		}
		if tc.want == nil {
			if len(c.Broken) != 0 {
				t.Errorf("%s: broken %q, want none", tc.name, c.Broken)
			}
			continue
		}
		if len(c.Broken) != 1 {
			t.Errorf("%s: broken %q, want one line", tc.name, c.Broken)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(c.Broken[0], w) {
				t.Errorf("%s: broken %q lacks %q", tc.name, c.Broken[0], w)
			}
		}
	}
}

func TestCompareMissingSweepAndDifferences(t *testing.T) {
	a, b := fixture(t, "search.json"), fixture(t, "search.json")
	b.Sweeps = b.Sweeps[1:] // oltp sync=on gone
	b.Server.Version = "PostgreSQL 16.4"
	b.Server.Settings["shared_buffers"] = "1GB"
	b.Config["duration"] = "7m0s"
	b.Config["json"] = "elsewhere.json" // where output went is no difference
	c, err := Compare(a, b, "a", "b", Options{KneeDrop: 0.1, P99Rise: -1})
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Broken) != 1 || !strings.Contains(c.Broken[0], "oltp sync=on: missing from B") {
		t.Errorf("a sweep missing from B: broken %q, want it to break the knee gate", c.Broken)
	}
	want := map[string][2]string{"server version": {"PostgreSQL 17.2", "PostgreSQL 16.4"}, "shared_buffers": {"128MB", "1GB"}, "--duration": {"12s", "7m0s"}}
	got := map[string][2]string{}
	for _, d := range c.Differences {
		got[d.What] = [2]string{d.A, d.B}
	}
	if len(got) != len(want) {
		t.Errorf("differences %+v, want exactly %v", c.Differences, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("difference %s = %q, want %q", k, got[k], v)
		}
	}
}

// TestCompareIntervalMethods: a file whose intervals were made by another method (the
// logistic fit of files before 2026-12-05) is named in the differences, so an overlap is
// not read across two questions unawares.
func TestCompareIntervalMethods(t *testing.T) {
	a, b := fixture(t, "search.json"), fixture(t, "search.json")
	for i := range b.Sweeps {
		if iv := b.Sweeps[i].Interval; iv != nil {
			cp := *iv
			cp.Method = search.IntervalMethod
			b.Sweeps[i].Interval = &cp
		}
	}
	c, err := Compare(a, b, "a", "b", Options{KneeDrop: -1, P99Rise: -1})
	if err != nil {
		t.Fatal(err)
	}
	var d *Difference
	for i := range c.Differences {
		if c.Differences[i].What == "knee interval" {
			d = &c.Differences[i]
		}
	}
	if d == nil || d.A != "logistic fit" || d.B != "collapse-rate model" {
		t.Errorf("differences %+v; want knee interval: logistic fit against collapse-rate model", c.Differences)
	}
	if same, _ := Compare(a, a, "a", "a", Options{KneeDrop: -1, P99Rise: -1}); len(same.Differences) != 0 {
		t.Errorf("a file against itself: differences %+v, want none", same.Differences)
	}
}

func TestCompareRuns(t *testing.T) {
	a, b := fixture(t, "run.json"), fixture(t, "run.json")
	if _, err := Compare(a, fixture(t, "search.json"), "run.json", "search.json", NoGates); err == nil ||
		!strings.Contains(err.Error(), "compare like with like") {
		t.Errorf("Compare(run, search) = %v, want a refusal", err)
	}
	p := &b.Sweeps[0].Probes[0]
	p.AchievedRate *= 0.5
	c, err := Compare(a, b, "a", "b", Options{KneeDrop: 0.1, P99Rise: -1})
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Broken) != 1 || !strings.Contains(c.Broken[0], "achieved rate dropped 50 %") {
		t.Errorf("run at half the achieved rate: broken %q", c.Broken)
	}
	var out bytes.Buffer
	if err := c.WriteText(&out, 100, false); err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"achieved", "-50.0 %", "REGRESSIONS:", "offered"} {
		if !strings.Contains(out.String(), w) {
			t.Errorf("run comparison text lacks %q:\n%s", w, out.String())
		}
	}
}

// TestCompareTextFits: at 100 and 60 columns no line is wider; --wide keeps a long
// bottleneck whole on one line.
func TestCompareTextFits(t *testing.T) {
	a, b := fixture(t, "search.json"), fixture(t, "search.json")
	scaleKnee(t, b, 1, 0.85, 1.4)
	long := strings.Repeat("a very long bottleneck explanation ", 8)
	b.Sweeps[1].Bottleneck = long
	b.Server.Settings["shared_buffers"] = strings.Repeat("x", 150)
	c, err := Compare(a, b, "base-results-with-a-long-name.json", "new.json", Options{KneeDrop: 0.1, P99Rise: 0.2})
	if err != nil {
		t.Fatal(err)
	}
	for _, width := range []int{100, 60} {
		var out bytes.Buffer
		if err := c.WriteText(&out, width, false); err != nil {
			t.Fatal(err)
		}
		for _, l := range strings.Split(out.String(), "\n") {
			if n := len([]rune(l)); n > width {
				t.Errorf("width %d: line of %d: %q", width, n, l)
			}
		}
		for _, w := range []string{"oltp sync=off", "knee", "interval", "p99 at knee", "-15.0 %", "+40.0 %", "REGRESSIONS:", "shared_buffers"} {
			if !strings.Contains(out.String(), w) {
				t.Errorf("width %d: text lacks %q:\n%s", width, w, out.String())
			}
		}
	}
	var out bytes.Buffer
	if err := c.WriteText(&out, 100, true); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), strings.TrimSpace(long)) {
		t.Errorf("--wide cut the bottleneck:\n%s", out.String())
	}
}

// TestCompareCopyUnit: copy's arrivals are rows, so its knees, rates and the gate's line
// are in rows/s, beside insert's and oltp's tx/s (plan/testdata/shapes.json: a search of
// insert, copy and oltp); a run of copy likewise.
func TestCompareCopyUnit(t *testing.T) {
	read := func() *result.File {
		f, err := result.Read("../plan/testdata/shapes.json")
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	a, b := read(), read()
	if b.Sweeps[1].Workload != "copy" {
		t.Fatalf("shapes.json: sweep 1 is %s, want copy", b.Sweeps[1].Workload)
	}
	scaleKnee(t, b, 1, 0.8, 1)
	c, err := Compare(a, b, "a", "b", Options{KneeDrop: 0.1, P99Rise: -1})
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Broken) != 1 || !strings.Contains(c.Broken[0], "copy sync=on: knee dropped 20 %, 183,540 -> 146,832 rows/s") {
		t.Errorf("broken %q: want copy's drop in rows/s", c.Broken)
	}
	var out bytes.Buffer
	if err := c.WriteText(&out, 100, false); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"183,540 rows/s", "146,832 rows/s", "18,217 tx/s", "2,711 tx/s"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("compare text lacks %q:\n%s", want, out.String())
		}
	}
	if strings.Contains(out.String(), "183,540 tx/s") {
		t.Errorf("compare text calls copy's rows tx/s:\n%s", out.String())
	}

	ra, rb := read(), read()
	for _, f := range []*result.File{ra, rb} {
		f.Command, f.Sweeps = "run", f.Sweeps[1:2]
		f.Sweeps[0].Probes = f.Sweeps[0].Probes[:1]
	}
	c, err = Compare(ra, rb, "a", "b", NoGates)
	if err != nil {
		t.Fatal(err)
	}
	out.Reset()
	if err := c.WriteText(&out, 100, false); err != nil {
		t.Fatal(err)
	}
	p := ra.Sweeps[0].Probes[0]
	for _, want := range []string{"offered", rate(p.TargetRate) + " rows/s", "achieved", rate(p.AchievedRate) + " rows/s"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("compare of copy runs lacks %q:\n%s", want, out.String())
		}
	}
	if strings.Contains(out.String(), "tx/s") {
		t.Errorf("compare of copy runs says tx/s:\n%s", out.String())
	}
}

// TestCompareClaims: a claim's sweeps are single probes at the claimed rate, so two claim
// files are compared as runs (offered, achieved, errors, p99), never as knees that "none
// passed".
func TestCompareClaims(t *testing.T) {
	var files [2]*result.File
	for i := range files {
		f, err := result.Read("../plan/testdata/shapes.json")
		if err != nil {
			t.Fatal(err)
		}
		f.Command = "claim"
		for j := range f.Sweeps {
			f.Sweeps[j].Knee, f.Sweeps[j].Interval = 0, nil
			f.Sweeps[j].Probes = f.Sweeps[j].Probes[:1]
		}
		files[i] = f
	}
	files[1].Sweeps[0].Probes[0].AchievedRate *= 0.5
	c, err := Compare(files[0], files[1], "a", "b", Options{KneeDrop: 0.1, P99Rise: -1})
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := c.WriteText(&out, 100, false); err != nil {
		t.Fatal(err)
	}
	if s := out.String(); strings.Contains(s, "none passed") || !strings.Contains(s, "achieved") || !strings.Contains(s, "offered") {
		t.Errorf("compare of two claims: want offered and achieved rates, no knees:\n%s", s)
	}
	if len(c.Broken) != 1 || !strings.Contains(c.Broken[0], "insert sync=on: achieved rate dropped 50 %") {
		t.Errorf("broken %q: want insert's achieved rate dropped 50 %%", c.Broken)
	}
}

// setFlush gives every passing probe at sweep i's knee a WAL sync time of ms per sync.
func setFlush(t *testing.T, f *result.File, i int, ms float64) {
	t.Helper()
	sw := &f.Sweeps[i]
	n := 0
	for j := range sw.Probes {
		p := &sw.Probes[j]
		if p.TargetRate != sw.Knee || p.Verdict != result.Pass {
			continue
		}
		if p.Observation == nil {
			p.Observation = &result.Observation{}
		}
		p.Observation.WAL.Syncs, p.Observation.WAL.SyncMs = 1000, 1000*ms
		n++
	}
	if n == 0 {
		t.Fatalf("sweep %d has no passing probe at its knee", i)
	}
}

// TestCompareFlush: the WAL flush time per sync at the knee is compared for sync=on sweeps,
// and a flush that moved against the knee is named as the storage's part of the change.
func TestCompareFlush(t *testing.T) {
	on, off := -1, -1
	for i, sw := range fixture(t, "search.json").Sweeps {
		if sw.Knee > 0 && sw.SyncCommit == result.SyncOn && on < 0 {
			on = i
		}
		if sw.Knee > 0 && sw.SyncCommit == result.SyncOff && off < 0 {
			off = i
		}
	}
	if on < 0 || off < 0 {
		t.Fatal("search.json lacks a sync=on or a sync=off sweep with a knee")
	}
	for _, tc := range []struct {
		name           string
		flushB, factor float64
		row, note      string // "" = must not appear
	}{
		{"faster disk, higher knee", 0.3, 1.25, "0.50 ms", "each WAL flush took 40 % less time in B, at a higher rate"},
		{"slower disk, lower knee", 0.8, 0.8, "+60.0 %", "each WAL flush took 60 % more time in B, at a lower rate"},
		{"slower flush at a higher rate is the load's", 0.8, 1.25, "0.80 ms", ""},
		{"a small change says nothing", 0.55, 1.25, "+10.0 %", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, b := fixture(t, "search.json"), fixture(t, "search.json")
			setFlush(t, a, on, 0.5)
			setFlush(t, a, off, 0.5)
			scaleKnee(t, b, on, tc.factor, 1)
			setFlush(t, b, on, tc.flushB)
			setFlush(t, b, off, tc.flushB)
			c, err := Compare(a, b, "a.json", "b.json", NoGates)
			if err != nil {
				t.Fatal(err)
			}
			var buf bytes.Buffer
			if err := c.WriteText(&buf, 200, true); err != nil {
				t.Fatal(err)
			}
			text := buf.String()
			parts := strings.Split(text, "\n"+a.Sweeps[off].Workload+" sync=off\n")
			onPart := text
			if k := strings.Index(text, a.Sweeps[on].Workload+" sync=on\n"); k >= 0 {
				onPart = text[k:]
				if e := strings.Index(onPart[1:], "\n\n"); e >= 0 {
					onPart = onPart[:e+1]
				}
			}
			if !strings.Contains(onPart, "WAL flush per sync") || !strings.Contains(onPart, tc.row) {
				t.Errorf("sync=on table lacks the flush row with %q:\n%s", tc.row, onPart)
			}
			if got := strings.Contains(onPart, "each WAL flush took"); got != (tc.note != "") || (tc.note != "" && !strings.Contains(onPart, tc.note)) {
				t.Errorf("flush note: want %q, got:\n%s", tc.note, onPart)
			}
			if len(parts) > 1 {
				offPart := parts[1]
				if e := strings.Index(offPart, "\n\n"); e >= 0 {
					offPart = offPart[:e]
				}
				if strings.Contains(offPart, "WAL flush per sync") {
					t.Errorf("a sync=off sweep, whose commits do not wait for the flush, shows it:\n%s", offPart)
				}
			}
		})
	}
}

// TestCompareRepeat: with repeat intervals on both sides a row says whether each run's
// estimate lies inside the other's (what two runs of an unchanged server do 9 times in
// 10), and a file from before they were recorded shows no such row.
func TestCompareRepeat(t *testing.T) {
	withRepeat := func(f *result.File, mid float64) {
		iv := *f.Sweeps[0].Interval
		iv.Midpoint, iv.Lo, iv.Hi, iv.RepeatLo, iv.RepeatHi = mid, mid*0.93, mid*1.07, mid*0.9, mid*1.1
		f.Sweeps[0].Interval = &iv
	}
	for _, tc := range []struct {
		name       string
		aMid, bMid float64 // 0: the fixture's interval as recorded (no repeat)
		have, want bool
		text       string
	}{
		{"estimates 5 % apart", 1000, 1050, true, true, "each inside"},
		{"estimates 15 % apart", 1000, 1150, true, false, "an estimate outside"},
		{"one side without a repeat interval", 1000, 0, false, false, ""},
	} {
		a, b := fixture(t, "search.json"), fixture(t, "search.json")
		if a.Sweeps[0].Interval == nil {
			t.Fatal("fixture search.json: sweep 0 has no interval")
		}
		withRepeat(a, tc.aMid)
		if tc.bMid > 0 {
			withRepeat(b, tc.bMid)
		}
		c, err := Compare(a, b, "a", "b", NoGates)
		if err != nil {
			t.Fatal(err)
		}
		r := c.Rows[0]
		if r.HaveRepeats != tc.have || r.Repeatable != tc.want {
			t.Errorf("%s: HaveRepeats %v, Repeatable %v; want %v, %v", tc.name, r.HaveRepeats, r.Repeatable, tc.have, tc.want)
		}
		var out bytes.Buffer
		if err := c.WriteText(&out, 200, true); err != nil {
			t.Fatal(err)
		}
		has := strings.Contains(out.String(), "a repeat lands")
		if has != tc.have || (tc.text != "" && !strings.Contains(out.String(), tc.text)) {
			t.Errorf("%s: text has the repeat row %v (want %v), with %q:\n%s", tc.name, has, tc.have, tc.text, out.String())
		}
	}
}
