package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestDuplicates(t *testing.T) {
	shared := "a := 1\nb := 2\nif a < b {\nc := a + b\n}\nd := c * 2\ne := d - 1\n"
	stanza := "x := load()\ny := x.a\nz := x.b\nuse(y, z)\nsave(x)\nlog(x)\n"
	cases := []struct {
		name  string
		files map[string]string
		want  string // blocks as "lines xN: file:from-to ..."
	}{{
		// The same lines, differently indented, with a blank line and a brace-only
		// line that normalization drops; the import and package clause never count.
		name: "two copies",
		files: map[string]string{
			"one.go": "package p\n\nimport \"fmt\"\n\nfunc f() {\n" + shared + "fmt.Println(e)\n}\n",
			"two.go": "package p\n\nfunc g() {\n\tx := 0\n" + strings.ReplaceAll(shared, "\n", "\n\n\t") + "}\n",
		},
		want: "6 x2: one.go:6-12 two.go:5-17",
	}, {
		name:  "three stanzas in a row",
		files: map[string]string{"one.go": "package p\n\nfunc h() {\n" + strings.Repeat(stanza, 3) + "}\n"},
		want:  "6 x3: one.go:4-9 one.go:10-15 one.go:16-21",
	}, {
		name: "short copies are not blocks",
		files: map[string]string{
			"one.go": "package p\n\nfunc f() {\n" + shared[:30] + "}\n",
			"two.go": "package p\n\nfunc g() {\n" + shared[:30] + "}\n",
		},
		want: "",
	}}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			var paths []string
			for name, src := range c.files {
				p := filepath.Join(dir, name)
				if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
					t.Fatal(err)
				}
				paths = append(paths, p)
			}
			blocks, err := duplicates(paths, 6)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, b := range blocks {
				s := fmt.Sprintf("%d x%d:", b.lines, len(b.at))
				for _, o := range b.at {
					s += fmt.Sprintf(" %s:%d-%d", filepath.Base(o.file), o.from, o.to)
				}
				got = append(got, s)
			}
			if g := strings.Join(got, "; "); g != c.want {
				t.Errorf("duplicates(%v, 6) = %q, want %q", c.files, g, c.want)
			}
		})
	}
}
