package report

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/pgceiling/pgceiling/result"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// readFixture reads a committed results fixture.
func readFixture(t *testing.T, name string) *result.File {
	t.Helper()
	f, err := result.Read(filepath.Join("testdata", name))
	if err != nil {
		t.Fatalf("read fixture: %v", err)
	}
	return f
}

// golden compares got with testdata/name, or rewrites it with -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read golden %s: %v (run go test ./report/ -update to create it)", path, err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the golden file; got:\n%s\n(run go test ./report/ -update if the change is intended)", name, got)
	}
}

func TestGolden(t *testing.T) {
	writers := []struct {
		ext   string
		write func(*bytes.Buffer, *result.File) error
	}{
		{"txt", func(b *bytes.Buffer, f *result.File) error { return WriteText(b, f) }},
		{"80.txt", func(b *bytes.Buffer, f *result.File) error { return WriteTextOpts(b, f, TextOptions{Width: 80}) }},
		{"wide.txt", func(b *bytes.Buffer, f *result.File) error { return WriteTextOpts(b, f, TextOptions{Wide: true}) }},
		{"md", func(b *bytes.Buffer, f *result.File) error { return WriteMarkdown(b, f) }},
		{"csv", func(b *bytes.Buffer, f *result.File) error { return WriteCSV(b, f) }},
	}
	for _, fx := range []string{"search", "run", "fsync-off", "claim"} {
		f := readFixture(t, fx+".json")
		for _, w := range writers {
			t.Run(fx+"."+w.ext, func(t *testing.T) {
				var b bytes.Buffer
				if err := w.write(&b, f); err != nil {
					t.Fatalf("write %s of %s.json: %v", w.ext, fx, err)
				}
				golden(t, fx+".golden."+w.ext, b.Bytes())
			})
		}
	}
}
