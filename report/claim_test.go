package report

import (
	"bytes"
	"strings"
	"testing"
)

// TestClaimFile: a claim's results file (testdata/claim.json, a real claim of insert,
// copy and oltp at a rate insert and oltp did not hold) is rendered as a claim, in every
// format: its verdicts, copy's rates in rows/s, each shape's probe as a run's, never a
// search's knees that none passed. The text is the verdict page `pgceiling claim`
// printed, within the width.
func TestClaimFile(t *testing.T) {
	f := readFixture(t, "claim.json")
	if f.Claim == nil || len(f.Claim.Shapes) == 0 {
		t.Fatal("claim.json has no claim section")
	}
	var page bytes.Buffer
	if err := WriteClaim(&page, f, 100); err != nil {
		t.Fatal(err)
	}
	var txt, md, html bytes.Buffer
	if err := WriteText(&txt, f); err != nil {
		t.Fatal(err)
	}
	if err := WriteMarkdown(&md, f); err != nil {
		t.Fatal(err)
	}
	if err := WriteHTML(&html, f, f.CommandLine); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(txt.String(), page.String()) {
		t.Errorf("the text report lacks the verdict page:\n%s\n--- page:\n%s", txt.String(), page.String())
	}
	for _, l := range strings.Split(page.String(), "\n") {
		if dw(l) > 99 {
			t.Errorf("verdict page line of %d columns: %q", dw(l), l)
		}
	}
	for name, out := range map[string]string{"text": txt.String(), "markdown": md.String(), "html": html.String()} {
		if strings.Contains(out, "none passed") || strings.Contains(out, "Sweeps") {
			t.Errorf("%s report of a claim shows a search's sweeps:\n%s", name, out)
		}
		for _, sh := range f.Claim.Shapes {
			want := sh.Workload + " sync=" + string(sh.SyncCommit)
			if !strings.Contains(out, want) {
				t.Errorf("%s report lacks shape %s", name, want)
			}
		}
		if !strings.Contains(out, "Claim: ") && name != "text" {
			t.Errorf("%s report lacks the claim's verdicts table", name)
		}
		if !strings.Contains(out, "rows/s") {
			t.Errorf("%s report gives copy's rates without rows/s", name)
		}
	}
}
