package report

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestWriteAll(t *testing.T) {
	f := readFixture(t, "search.json")
	dir := filepath.Join(t.TempDir(), "new", "report")
	if out := os.Getenv("PGCEILING_REPORT_OUT"); out != "" {
		dir = out // to look at the charts by hand
	}
	paths, err := WriteAll(dir, f)
	if err != nil {
		t.Fatalf("WriteAll(%s, search.json): %v", dir, err)
	}
	want := []string{"report.md", "probes.csv", "series.csv", "report.html", "achieved-oltp.png", "achieved-oltp.svg", "waits-transfer-sync-off.png"}
	for _, w := range want {
		p := filepath.Join(dir, w)
		st, err := os.Stat(p)
		if err != nil || st.Size() == 0 {
			t.Errorf("WriteAll: %s missing or empty (%v)", p, err)
		}
	}
	if len(paths) != 4+2*16 {
		t.Errorf("WriteAll wrote %d files, want 36: %v", len(paths), paths)
	}
	for _, p := range paths {
		if !strings.HasPrefix(p, dir) {
			t.Errorf("WriteAll wrote %s outside %s", p, dir)
		}
	}
}
