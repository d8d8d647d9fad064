package report

import (
	"bytes"
	"regexp"
	"strings"
	"testing"

	"github.com/pgceiling/pgceiling/result"
)

func TestHTMLSelfContained(t *testing.T) {
	f := readFixture(t, "fsync-off.json")
	var b bytes.Buffer
	if err := WriteHTML(&b, f, f.CommandLine); err != nil {
		t.Fatalf("WriteHTML(fsync-off.json): %v", err)
	}
	page := b.String()
	charts, err := Charts(f)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(page, `src="data:image/png;base64,`); n != len(charts) || n == 0 {
		t.Errorf("WriteHTML: %d inline charts, want %d", n, len(charts))
	}
	if !strings.Contains(page, strings.Join(f.CommandLine, " ")) {
		t.Errorf("WriteHTML: the command line %q is missing", strings.Join(f.CommandLine, " "))
	}
	warn := `<div class="warning" role="alert">WARNING: fsync=off`
	first, last := strings.Index(page, warn), strings.LastIndex(page, warn)
	if first < 0 || first > strings.Index(page, "<h1>") || last < strings.LastIndex(page, "<figure") {
		t.Errorf("WriteHTML: the fsync warning must come before the title and after the charts (first %d, last %d)", first, last)
	}
	// No external resources: no http(s) URL, no src or href that is not inline data.
	if m := regexp.MustCompile(`(?i)(https?:)?//[a-z0-9.-]+\.[a-z]{2,}/?`).FindString(page); m != "" {
		t.Errorf("WriteHTML: external URL %q in the page", m)
	}
	for _, m := range regexp.MustCompile(`(?i)(src|href)\s*=\s*"([^"]{0,20})`).FindAllStringSubmatch(page, -1) {
		if !strings.HasPrefix(m[2], "data:") && !strings.HasPrefix(m[2], "#") {
			t.Errorf("WriteHTML: %s=%q is not inline", m[1], m[2])
		}
	}
	if strings.Contains(page, "<script") || strings.Contains(page, "<link") {
		t.Errorf("WriteHTML: the page has a script or link element")
	}
}

func TestHTMLEscapes(t *testing.T) {
	f := readFixture(t, "run.json")
	f.Warnings = []string{`<script>alert("x")</script>`}
	var b bytes.Buffer
	if err := WriteHTML(&b, f, []string{"pgceiling", "run", "--workload", "<b>"}); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), "<script>") || strings.Contains(b.String(), "<b>") {
		t.Errorf("WriteHTML does not escape warnings and the command line")
	}
}

// Every format carries the fsync=off warning of an unsafe server.
func TestFsyncOffWarnedEverywhere(t *testing.T) {
	f := readFixture(t, "fsync-off.json")
	// Also without the tool's own warnings: the disclosure alone must be enough.
	bare := *f
	bare.Warnings = nil
	d := *f.Server
	d.Warnings = nil
	bare.Server = &d
	for _, file := range []*result.File{f, &bare} {
		for _, w := range []struct {
			name  string
			write func(*bytes.Buffer) error
		}{
			{"text", func(b *bytes.Buffer) error { return WriteText(b, file) }},
			{"markdown", func(b *bytes.Buffer) error { return WriteMarkdown(b, file) }},
			{"html", func(b *bytes.Buffer) error { return WriteHTML(b, file, nil) }},
		} {
			var b bytes.Buffer
			if err := w.write(&b); err != nil {
				t.Fatalf("%s: %v", w.name, err)
			}
			out := b.String()
			if c := strings.Count(strings.ToLower(out), "warning"); c < 2 || !strings.Contains(out, "fsync=off") {
				t.Errorf("%s of an fsync=off file (tool warnings %d): %d warnings, want the fsync=off warning first and last", w.name, len(file.Warnings), c)
			}
		}
	}
	charts, err := Charts(&bare)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range charts {
		if !strings.Contains(c.Panels[0][0].Title.Text, "fsync=off") {
			t.Errorf("chart %s of an fsync=off file: title %q carries no warning", c.Name, c.Panels[0][0].Title.Text)
		}
	}
	// CSV has no page to put a warning on: the fsync setting is in the disclosure, not per
	// row, so the CSV is checked for its shape only (see TestGolden).
}

func TestEmptyAndBrokenFiles(t *testing.T) {
	f := result.NewFile("search")
	f.Error = "connect: connection refused"
	f.Interrupted = true
	for _, w := range []struct {
		name  string
		write func(*bytes.Buffer) error
	}{
		{"text", func(b *bytes.Buffer) error { return WriteText(b, f) }},
		{"markdown", func(b *bytes.Buffer) error { return WriteMarkdown(b, f) }},
		{"html", func(b *bytes.Buffer) error { return WriteHTML(b, f, nil) }},
	} {
		var b bytes.Buffer
		if err := w.write(&b); err != nil {
			t.Fatalf("%s of a file with no sweeps: %v", w.name, err)
		}
		for _, want := range []string{"connection refused", "nterrupted", "no sweeps"} {
			if !strings.Contains(strings.ToLower(b.String()), want) {
				t.Errorf("%s of a file with no sweeps lacks %q:\n%s", w.name, want, b.String())
			}
		}
	}
	var b bytes.Buffer
	if err := WriteCSV(&b, f); err != nil || strings.Count(b.String(), "\n") != 1 {
		t.Errorf("WriteCSV of a file with no sweeps: err %v, want only the header: %q", err, b.String())
	}
}

func TestDriverLimitedWarned(t *testing.T) {
	f := readFixture(t, "fsync-off.json")
	var b bytes.Buffer
	if err := WriteText(&b, f); err != nil {
		t.Fatal(err)
	}
	var wide bytes.Buffer // the verdict whole in its cell
	if err := WriteTextOpts(&wide, f, TextOptions{Wide: true}); err != nil {
		t.Fatal(err)
	}
	// The 6,400 tx/s probe failed on its errors while the driver was also behind: the
	// failure stands, so no "the client was the limit" warning.
	want := "!!! WARNING: insert sync=on: the client, not the server, was the limit at 6,400 tx/s"
	if c := strings.Count(b.String(), want); c != 0 {
		t.Errorf("WriteText(fsync-off.json): a probe judged fail is warned as driver-limited %d times", c)
	}
	// Judged driver_limited, the same probe is warned first and last.
	for i := range f.Sweeps {
		for j := range f.Sweeps[i].Probes {
			if p := &f.Sweeps[i].Probes[j]; p.TargetRate == 6400 {
				p.Verdict = result.DriverLimited
			}
		}
	}
	var dl bytes.Buffer
	if err := WriteText(&dl, f); err != nil {
		t.Fatal(err)
	}
	if c := strings.Count(dl.String(), want); c != 2 {
		t.Errorf("WriteText: the driver-limited warning appears %d times, want first and last:\n%s", c, dl.String())
	}
	if !strings.Contains(wide.String(), "fail [driver limited]") {
		t.Errorf("WriteText(fsync-off.json): the driver-limited probe is not marked in the probes table")
	}
}

func TestHostStealWarned(t *testing.T) {
	f := readFixture(t, "fsync-off.json")
	for i := range f.Sweeps {
		for j := range f.Sweeps[i].Probes {
			if p := &f.Sweeps[i].Probes[j]; p.TargetRate == 6400 {
				p.Verdict = result.HostSteal
			}
		}
	}
	var b bytes.Buffer
	// Wide enough that the warning is one line.
	if err := WriteTextOpts(&b, f, TextOptions{Width: 400}); err != nil {
		t.Fatal(err)
	}
	want := "!!! WARNING: insert sync=on: during the failing probes at 6,400 tx/s the hypervisor gave other guests at least 10 % of this machine's CPU, or 5 % in the 15 s before they broke down (steal)"
	if c := strings.Count(b.String(), want); c != 2 {
		t.Errorf("WriteText with a host_steal probe: warning %q printed %d times, want first and last:\n%s", want, c, b.String())
	}
}

// The page is laid out for people and screen readers: a viewport, a table of contents
// whose links all land, tables with captions and header scopes, and each sweep's charts
// in the section of its probes table.
func TestHTMLStructure(t *testing.T) {
	f := readFixture(t, "search.json")
	var b bytes.Buffer
	if err := WriteHTML(&b, f, nil); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	if !strings.Contains(page, `<meta name="viewport" content="width=device-width, initial-scale=1">`) {
		t.Errorf("WriteHTML: no viewport meta tag")
	}
	nav := page[strings.Index(page, "<nav"):strings.Index(page, "</nav>")]
	links := regexp.MustCompile(`href="#([^"]+)"`).FindAllStringSubmatch(nav, -1)
	if len(links) != 1+1+len(f.Sweeps) { // server, sweeps, one per sweep
		t.Errorf("WriteHTML: the contents have %d links, want %d:\n%s", len(links), 2+len(f.Sweeps), nav)
	}
	for _, l := range links {
		if !strings.Contains(page, `id="`+l[1]+`"`) {
			t.Errorf("WriteHTML: the contents link to #%s, which is not in the page", l[1])
		}
	}
	tables, captions := strings.Count(page, "<table>"), strings.Count(page, "<caption>")
	if tables == 0 || tables != captions {
		t.Errorf("WriteHTML: %d tables, %d captions; want one caption per table", tables, captions)
	}
	if strings.Contains(page, "<th>") {
		t.Errorf("WriteHTML: a header cell without scope")
	}
	for i := range f.Sweeps {
		s := &f.Sweeps[i]
		key := slug(s.Workload, "sync", string(s.SyncCommit))
		start := strings.Index(page, `<section id="sweep-`+key+`">`)
		end := start + strings.Index(page[max(start, 0):], "</section>")
		if start < 0 {
			t.Errorf("WriteHTML: no section for %s", key)
			continue
		}
		sec := page[start:end]
		for _, want := range []string{"<caption>Probes: " + sweepName(s) + "</caption>", `<figure id="waits-` + key + `">`, `<figure id="timeline-` + key + `-knee">`} {
			if !strings.Contains(sec, want) {
				t.Errorf("WriteHTML: the section of %s lacks %s", key, want)
			}
		}
	}
}
